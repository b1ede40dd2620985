import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import type { FeedPosition } from './feed.repository.ts';

// Where each consumer of the feed (webhooks, workflows, bots) has read to: one row per consumer, shared by
// every instance (system role).

/** Makes the cursor at `start` unless it exists (a first start reads from the head, not the past). */
export async function ensureCursor(trx: Tx, name: string, start: FeedPosition) {
  await trx
    .insertInto('feed_cursors')
    .values({ name, txid: start.txid, position: start.position })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/**
 * The cursor, locked until the transaction ends: of two instances reading at once, the second waits, then
 * reads where the first left off (read committed re-reads the locked row).
 */
export async function lockCursor(trx: Tx, name: string): Promise<FeedPosition | undefined> {
  const row = await trx
    .selectFrom('feed_cursors')
    .select([sql<string>`txid::text`.as('txid'), 'position'])
    .where('name', '=', name)
    .forUpdate()
    .executeTakeFirst();
  return row ? { txid: row.txid, position: Number(row.position) } : undefined;
}

export async function advanceCursor(trx: Tx, name: string, to: FeedPosition) {
  await trx
    .updateTable('feed_cursors')
    .set({ txid: to.txid, position: to.position, updated_at: sql<Date>`now()` })
    .where('name', '=', name)
    .execute();
}
