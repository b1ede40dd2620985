import { type RawBuilder, sql } from 'kysely';
import { EVENT_WRITER_LOCK, type Tx } from '../db/database.ts';
import { preparedShapes } from '../db/prepared.ts';
import type { EventPayloads, EventType } from './outbox.ts';

/**
 * The one reader of the outbox: the events feed, the socket streams and everything after them (webhooks,
 * workflows) read through here.
 *
 * Order. Events are ordered by (txid, position): the writing transaction's id (xid8), then the insert order.
 * txid is compared as xid8, never as text ("1000" sorts before "999" as text).
 *
 * The horizon. A transaction that is still running may commit events whose txid is lower than events
 * already visible; a reader that moved its cursor past them would skip them for good. So a read hands out
 * only events whose txid is below the horizon: the lowest txid that may still commit events. Only
 * transactions that write events hold it back. Every such transaction takes a shared advisory lock
 * (EVENT_WRITER_LOCK, keyed by its tenant) before it has a txid (`Database.withTenant(..., {eventWriter})`;
 * a trigger refuses an event insert without it). The reading statement's own snapshot (taken as it
 * starts: `pg_current_snapshot()`, which is also what it sees of the events) comes first, then it looks at
 * pg_locks: a txid that the snapshot saw running is held back when its backend holds the writer lock, or
 * when it has finished in between (it may have been a writer: the next read sees its events). A transaction
 * that writes no events — a migration, a bulk import, another database's work, a client idle in a
 * transaction — never delays delivery.
 *
 * `serial`: the database runs one transaction at a time (PGlite, src/db/pglite-pool.ts). While the reader's
 * transaction runs, every other one has ended, so everything visible is final: there is no horizon to find.
 */

export interface FeedPosition {
  /** The writing transaction's id (xid8) in decimal. */
  txid: string;
  position: number;
}

export const FEED_START: FeedPosition = { txid: '0', position: 0 };

export interface FeedRow extends FeedPosition {
  id: string;
  type: EventType;
  tenant_id: string;
  created_at: Date;
  /** As writeEvent stored it for `type` (the outbox is written only through writeEvent). */
  data: EventPayloads[EventType];
  conversation_id: string | null;
  internal: boolean;
  recipients: string[];
  visitor_id: string | null;
  /** How many workflow runs led to the change (src/workflows/). */
  workflow_depth: number;
}

export interface FeedPage {
  /** In feed order, all below the horizon. */
  rows: FeedRow[];
  /** Committed events exist after these that a running writer still holds back: read again soon. */
  heldBack: boolean;
  /**
   * The tenants of the held-back events the read saw ([] when none were); absent when not known: the read
   * stopped at its limit with some held back, and more may be held back past it, of any tenant.
   */
  heldBackTenants?: string[] | undefined;
}

/** The outbox's columns that make a FeedRow (its txid comes as text beside them). */
export const FEED_COLUMNS = [
  'id',
  'type',
  'tenant_id',
  'created_at',
  'data',
  'conversation_id',
  'internal',
  'recipients',
  'visitor_id',
  'workflow_depth',
  'position',
] as const;

export const tenantLockKey = (tenantId: string) => sql<number>`hashtext(${tenantId}) & 2147483647`;

/** The lock table as `locks`, read once (see `horizon`): transaction locks granted, and the event writers' locks. */
const LOCK_TABLE = sql`locks as materialized (
    select locktype, mode, granted, transactionid, pid, classid, objid, objsubid, database from pg_locks
    where (locktype = 'transactionid' and granted) or (locktype = 'advisory' and classid = ${EVENT_WRITER_LOCK}::oid and objsubid = 2)
  )`;

/**
 * Whether the transaction with the 64-bit txid `txid` may still commit events (the tenant's, or any), as
 * `locks` shows it: yes, unless its own lock on its id shows it running on a backend that holds no event
 * writer lock. One whose lock is gone ended after the snapshot, and may have committed events the snapshot
 * cannot see. (pg_locks shows the 32-bit xid.) The one predicate of `horizon` and `aloneBelow`.
 */
const mayStillWriteEvents = (txid: RawBuilder<unknown>, tenantId: string | undefined) => sql<boolean>`not exists (
    select 1 from locks t
    where t.locktype = 'transactionid' and t.mode = 'ExclusiveLock'
      and t.transactionid::text::bigint = ${txid} % 4294967296
      and not exists (
        select 1 from locks w
        where w.locktype = 'advisory' and w.pid = t.pid
          and w.database = (select oid from pg_database where datname = current_database())
          ${tenantId === undefined ? sql`` : sql`and w.objid = (${tenantLockKey(tenantId)})::oid`}
      )
  )`;

/**
 * The lowest txid that may still commit events (of one tenant, or of any), as the reading statement sees them.
 * The lock table is read once (`locks`): pg_locks calls pg_lock_status() at every reference, so reading it
 * twice could see a writer's transaction lock in one reading and, the writer having committed in between,
 * miss its writer lock in the other; the writer would then pass for a non-writer and the reader would move
 * past events that commit after this statement's snapshot, skipping them for good. Only a transaction's own
 * lock on its id says it runs (ExclusiveLock): a backend that waited for it (a row it locked) holds a share
 * lock on that id, granted, for a moment after it has ended.
 */
const horizon = (tenantId: string | undefined) => sql<string>`(
  with ${LOCK_TABLE}
  select coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))::text
  from pg_snapshot_xip(pg_current_snapshot()) as x
  where ${mayStillWriteEvents(sql`x::text::bigint`, tenantId)}
)`;

/**
 * Whether the calling transaction, whose txid is `txid` and which holds the tenant's writer lock, has every
 * event the tenant will ever have below its own in sight: no transaction with a lower txid may still commit
 * events for the tenant, as the calling statement sees the lock table. Then the tenant's last event below
 * its own in the statement's snapshot is the one its events follow for good (the handoff to the streams,
 * src/events/outbox.ts), as on a database that runs one transaction at a time.
 *
 * The candidates are the txids below `txid` that the statement's snapshot saw running: those in its xip
 * list, and those from its xmax up (the snapshot does not list them; they were all assigned before `txid`
 * and none had ended). As in `horizon`, the lock table is read after the snapshot, once: a candidate counts
 * against when its backend holds the tenant's writer lock, or when its transaction lock is gone (it ended
 * after the snapshot: it may have committed events this statement cannot see). A candidate still running
 * without the writer lock writes no events: a writer takes it before it has a txid.
 */
export const aloneBelow = (tenantId: string, txid: RawBuilder<unknown>) => sql<boolean>`not exists (
  with ${LOCK_TABLE}
  select 1
  from (
    select x::text::bigint as x from pg_snapshot_xip(pg_current_snapshot()) as x
    union all
    select generate_series(pg_snapshot_xmax(pg_current_snapshot())::text::bigint, ${txid}::text::bigint - 1)
  ) as candidate
  where candidate.x < ${txid}::text::bigint
    and ${mayStillWriteEvents(sql`candidate.x`, tenantId)}
)`;

/**
 * Events after `after`, in feed order, at most `limit`, none that a running writer could still precede.
 * With `upTo` (a position an earlier read reached), the events up to it: those were judged safe then.
 * With a tenant, the transaction must run as that tenant (row-level security); without one (the system
 * role), every tenant's.
 */
export async function readFeed(
  trx: Tx,
  options: { tenantId?: string; after: FeedPosition; upTo?: FeedPosition; limit: number; serial?: boolean },
): Promise<FeedPage> {
  const { after, upTo } = options;
  const shape: FeedShape = { tenant: options.tenantId !== undefined, upTo: !!upTo, serial: !!options.serial };
  const { rows } = await feedStatements(trx, shape, {
    afterTxid: after.txid,
    afterPosition: after.position,
    tenantId: options.tenantId ?? null,
    upToTxid: upTo?.txid ?? null,
    upToPosition: upTo?.position ?? null,
    limit: options.limit,
  });
  const page: FeedRow[] = [];
  for (const { txid_text, ready: isReady, ...row } of rows) {
    if (!isReady) break;
    page.push({ ...row, txid: txid_text, position: Number(row.position) } as FeedRow);
  }
  const heldBack = page.length < rows.length;
  const full = rows.length >= options.limit;
  if (heldBack && full) return { rows: page, heldBack };
  return { rows: page, heldBack, heldBackTenants: [...new Set(rows.slice(page.length).map((r) => r.tenant_id))] };
}

interface FeedShape {
  tenant: boolean;
  upTo: boolean;
  serial: boolean;
}

type FeedParams = {
  afterTxid: string;
  afterPosition: number;
  tenantId: string | null;
  upToTxid: string | null;
  upToPosition: number | null;
  limit: number;
};

/**
 * The feed read, compiled once per shape (src/db/prepared.ts): every socket stream, the events feed and the
 * dispatchers read through it after each commit, and by name it is planned once per connection.
 */
const feedStatements = preparedShapes((db, p: FeedParams, shape: FeedShape) => {
  const ready = shape.upTo || shape.serial ? sql<boolean>`true` : sql<boolean>`events.txid < (${horizon(shape.tenant ? p.tenantId! : undefined)})::xid8`;
  let query = db
    .selectFrom('events')
    .select([...FEED_COLUMNS, sql<string>`events.txid::text`.as('txid_text'), ready.as('ready')])
    .where(sql<boolean>`(events.txid, events.position) > (${p.afterTxid}::xid8, ${p.afterPosition}::bigint)`);
  if (shape.tenant) query = query.where('tenant_id', '=', p.tenantId!);
  if (shape.upTo) query = query.where(sql<boolean>`(events.txid, events.position) <= (${p.upToTxid}::xid8, ${p.upToPosition}::bigint)`);
  return query.orderBy(sql`events.txid`).orderBy(sql`events.position`).limit(p.limit);
});

/** The last position no running writer can precede: a new reader that starts here misses nothing after it. */
export async function feedHead(trx: Tx, tenantId?: string, options: { serial?: boolean } = {}): Promise<FeedPosition> {
  let query = trx.selectFrom('events').select([sql<string>`events.txid::text`.as('txid_text'), 'position']);
  if (!options.serial) query = query.where(sql<boolean>`events.txid < (${horizon(tenantId)})::xid8`);
  if (tenantId !== undefined) query = query.where('tenant_id', '=', tenantId);
  const row = await query.orderBy(sql`events.txid desc`).orderBy(sql`events.position desc`).limit(1).executeTakeFirst();
  return row ? { txid: row.txid_text, position: Number(row.position) } : FEED_START;
}

/** Where an event sits in the feed (resume from it), or undefined when it is unknown or pruned. */
export async function positionOfEvent(trx: Tx, eventId: string): Promise<FeedPosition | undefined> {
  const row = await trx
    .selectFrom('events')
    .select([sql<string>`events.txid::text`.as('txid_text'), 'position'])
    .where('id', '=', eventId)
    .executeTakeFirst();
  return row ? { txid: row.txid_text, position: Number(row.position) } : undefined;
}

export function compareFeedPositions(a: FeedPosition, b: FeedPosition): number {
  const byTxid = BigInt(a.txid) - BigInt(b.txid);
  if (byTxid !== 0n) return byTxid < 0n ? -1 : 1;
  return a.position - b.position;
}
