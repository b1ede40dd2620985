import { sql } from 'kysely';
import { dbFromNow } from '../db/clock.ts';
import type { Tx } from '../db/database.ts';
import { inDueOrder } from '../db/due-order.ts';
import { idIn } from '../db/id-lookup.ts';
import type { DB } from '../db/schema.ts';

/** The queues whose rows are attempts of a delivery: one outcome per attempt, retried on a schedule. */
export type DeliveryTable = 'bot_deliveries' | 'webhook_deliveries';
/** The queues the feed fills and a ClaimLoop works (src/events/feed-queue.ts). */
export type WorkedTable = 'bot_deliveries' | 'workflow_runs';

/**
 * Claims up to `limit` due rows of a worked queue for `leaseMs` under the token, answering the columns
 * asked for: a row is this instance's until it records its outcome or the lease runs out. SKIP LOCKED:
 * instances claiming at once take different rows; due order from the partial due index (inDueOrder).
 */
export async function claimDueRows<Table extends WorkedTable, Column extends keyof DB[Table] & string>(
  trx: Tx,
  table: Table,
  columns: readonly Column[],
  limit: number,
  lockToken: string,
  leaseMs: number,
): Promise<{ [C in Column]: DB[Table][C] extends { __select__: infer S } ? S : DB[Table][C] }[]> {
  // The two tables share the queue's columns; Kysely types one of them.
  const due = trx
    .selectFrom(table as 'bot_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .forUpdate()
    .skipLocked();
  const claimed = await inDueOrder(trx, () =>
    trx
      .updateTable(table as 'bot_deliveries')
      .set((eb) => ({ locked_until: dbFromNow(leaseMs), lock_token: lockToken, attempts: eb('attempts', '+', 1) }))
      .where(idIn('id', due))
      .returning(columns as unknown as 'id'[])
      .execute(),
  );
  return claimed as never;
}

/**
 * A failed attempt: retried after `retryInMs`, or failed for good when that is undefined. Whether this
 * instance still held the row: when its lease ran out and another took it, nothing is written.
 */
export async function recordFailedAttempt(
  trx: Tx,
  table: DeliveryTable,
  id: string,
  lockToken: string,
  outcome: { statusCode: number | null; error: string; retryInMs: number | undefined },
): Promise<boolean> {
  // The two tables share these columns; Kysely types one of them.
  const result = await trx
    .updateTable(table as 'bot_deliveries')
    .set((eb) => ({
      status: outcome.retryInMs === undefined ? 'failed' : 'pending',
      next_attempt_at: outcome.retryInMs === undefined ? null : dbFromNow(outcome.retryInMs),
      retry_step: eb('retry_step', '+', 1),
      locked_until: null,
      lock_token: null,
      last_status_code: outcome.statusCode,
      last_error: outcome.error.slice(0, 1000),
    }))
    .where('id', '=', id)
    .where('lock_token', '=', lockToken)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * The pending rows across tenants (system role, for metrics): due now (in flight included) or scheduled
 * for a retry, and the age of the oldest due one. Reads the partial due index.
 */
export async function queueStats(trx: Tx, table: WorkedTable): Promise<{ due: number; scheduled: number; oldest_due_seconds: number }> {
  return trx
    .selectFrom(table as 'bot_deliveries')
    .where('status', '=', 'pending')
    .select([
      sql<number>`(count(*) filter (where next_attempt_at <= now()))::integer`.as('due'),
      sql<number>`(count(*) filter (where next_attempt_at > now()))::integer`.as('scheduled'),
      sql<number>`coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8`.as('oldest_due_seconds'),
    ])
    .executeTakeFirstOrThrow();
}
