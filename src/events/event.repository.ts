import { type Kysely, sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { prepared } from '../db/prepared.ts';
import type { DB } from '../db/schema.ts';
import { aloneBelow, FEED_COLUMNS, FEED_START, type FeedPosition, type FeedRow } from './feed.repository.ts';

/**
 * Writes one event into the outbox, in the caller's transaction (which must be an event writer: see
 * src/events/feed.repository.ts). Reading the outbox is feed.repository.ts's job.
 */
export async function insertEvent(trx: Tx, event: NewEvent): Promise<void> {
  await insertEventStatement(trx, paramsOf(event));
}

export interface NewEvent {
  id: string;
  tenant_id: string;
  type: string;
  data: unknown;
  conversation_id: string | null;
  internal: boolean;
  recipients: string[];
  created_at: Date;
  workflow_depth?: number;
}

const paramsOf = (event: NewEvent): InsertParams => ({ ...event, data: JSON.stringify(event.data), workflow_depth: event.workflow_depth ?? 0 });

type InsertParams = {
  id: string;
  tenant_id: string;
  type: string;
  data: string;
  conversation_id: string | null;
  internal: boolean;
  recipients: string[];
  created_at: Date;
  workflow_depth: number;
};

const insertEventStatement = prepared((db, p: InsertParams) => db.insertInto('events').values(eventValues(p)));

/**
 * Writes the event and answers it as the feed would read it, with the tenant's event just before it in
 * feed order (`after`) and whether that is final (`alone`): then a stream positioned at `after` may deliver
 * the row without reading the feed (src/realtime/tenant-stream.ts); any other stream reads as usual.
 *
 * On a database that runs one transaction at a time (PGlite) it is always final: nothing else can commit
 * between that read and this transaction's commit. On PostgreSQL (`concurrent`) only when no transaction
 * below this one may still commit events for the tenant (`aloneBelow`, src/events/feed.repository.ts): one
 * that commits later with a lower txid would come between `after` and this row.
 */
export async function insertEventAsFeedRow(trx: Tx, event: NewEvent, options: { concurrent?: boolean } = {}): Promise<{ row: FeedRow; after: FeedPosition; alone: boolean }> {
  const {
    rows: [inserted],
  } = await (options.concurrent ? insertEventAsFeedRowConcurrent : insertEventAsFeedRowStatement)(trx, paramsOf(event));
  const { txid_text, position, before, alone, ...rest } = inserted as typeof inserted & { alone?: boolean };
  return {
    row: { ...rest, txid: txid_text, position: Number(position) } as FeedRow,
    after: before ? { txid: before[0]!, position: Number(before[1]) } : FEED_START,
    alone: alone ?? true,
  };
}

const feedRowOf = (p: InsertParams, db: Kysely<DB>) =>
  db
    .insertInto('events')
    .values(eventValues(p))
    .returning([
      ...FEED_COLUMNS,
      sql<string>`events.txid::text`.as('txid_text'),
      // The statement does not see its own row: this is the tenant's last event before it.
      sql<[string, string] | null>`(
        select array[prior.txid::text, prior.position::text] from events prior
        where prior.tenant_id = events.tenant_id and (prior.txid, prior.position) < (events.txid, events.position)
        order by prior.txid desc, prior.position desc limit 1
      )`.as('before'),
    ]);

const insertEventAsFeedRowStatement = prepared((db, p: InsertParams) => feedRowOf(p, db));

const insertEventAsFeedRowConcurrent = prepared((db, p: InsertParams) =>
  feedRowOf(p, db).returning(aloneBelow(p.tenant_id, sql`events.txid`).as('alone')),
);

function eventValues(p: InsertParams) {
  return {
    id: p.id,
    tenant_id: p.tenant_id,
    type: p.type,
    data: p.data,
    conversation_id: p.conversation_id,
    internal: p.internal,
    recipients: p.recipients,
    created_at: p.created_at,
    workflow_depth: p.workflow_depth,
    // The conversation's visitor, read in this same transaction: visitors' sockets get only their own (none
    // without a conversation: no row has a null id).
    visitor_id: sql<string | null>`(select visitor_id from conversations where id = ${p.conversation_id})`,
  };
}
