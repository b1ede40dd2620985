import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';

// Snooze is two columns of conversations (DESIGN 18): until a time, and until the visitor writes.

const SNOOZED = sql<boolean>`(snoozed_until is not null or snooze_until_reply)`;

/** The conversation, locked for the rest of the transaction; undefined when it is not in this tenant. */
export async function lockConversation(trx: Tx, id: string) {
  return trx.selectFrom('conversations').select(['id', 'status', 'snoozed_until', 'snooze_until_reply']).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function setSnooze(trx: Tx, id: string, snooze: { until: Date | null; untilReply: boolean }, now: Date): Promise<void> {
  await trx.updateTable('conversations').set({ snoozed_until: snooze.until, snooze_until_reply: snooze.untilReply, updated_at: now }).where('id', '=', id).execute();
}

/** Ends the conversation's snooze, if it has one; answers whether it had. One statement. */
export async function clearSnooze(trx: Tx, id: string, now: Date): Promise<boolean> {
  const row = await trx
    .updateTable('conversations')
    .set({ snoozed_until: null, snooze_until_reply: false, updated_at: now })
    .where('id', '=', id)
    .where(SNOOZED)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Snoozes whose time has come, every tenant's (the system role reads them): oldest first. */
export async function dueSnoozes(trx: Tx, now: Date, limit: number) {
  return trx
    .selectFrom('conversations')
    .select(['id', 'tenant_id'])
    .where('snoozed_until', '<=', now)
    .orderBy('snoozed_until')
    .limit(limit)
    .execute();
}

/** Ends a snooze whose time has come (false: it ended or changed meanwhile). */
export async function clearDueSnooze(trx: Tx, id: string, now: Date): Promise<boolean> {
  const row = await trx
    .updateTable('conversations')
    .set({ snoozed_until: null, snooze_until_reply: false, updated_at: now })
    .where('id', '=', id)
    .where('snoozed_until', '<=', now)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}
