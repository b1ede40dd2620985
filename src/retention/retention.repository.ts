import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { idIn } from '../db/id-lookup.ts';
import { dbAgo, dbIdAgo } from '../db/clock.ts';
import { ID_PREFIXES } from '../shared/ids.ts';

// Each function deletes at most `limit` of its table's rows past retention and answers how many it
// deleted; the job calls it again until a batch comes back short. The age test is repeated on the
// DELETE itself: a row changed between the inner SELECT and the DELETE (an idempotency key taken over
// afresh) is rechecked against it and kept.

export async function deleteOldIdempotencyKeys(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', cutoff)
    .where((eb) =>
      eb(
        eb.refTuple('tenant_id', 'caller_id', 'key'),
        'in',
        eb
          .selectFrom('idempotency_keys as old')
          .select(['old.tenant_id', 'old.caller_id', 'old.key'])
          .where('old.created_at', '<', cutoff)
          .limit(limit)
          .$asTuple('tenant_id', 'caller_id', 'key'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Refresh tokens that can no longer matter: expired, or revoked, for longer than the grace. A used
 * (rotated) token of a live login is kept until it expires: presenting it again is how a theft is
 * detected and the login revoked, however long after its use that happens. An expired or revoked token
 * is refused without revoking anything, exactly as an unknown one is, and a login whose tokens are all
 * revoked or expired is ended either way, so deleting them changes no answer.
 */
export async function deleteDeadRefreshTokens(trx: Tx, graceMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(graceMs);
  const result = await trx
    .deleteFrom('refresh_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('refresh_tokens as dead')
        .select('dead.id')
        .where((w) => w.or([w('dead.expires_at', '<', cutoff), w('dead.revoked_at', '<', cutoff)]))
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Mail tokens used or expired for longer than retention: neither can be used again. */
export async function deleteDeadMailTokens(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('mail_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('used_at', '<', cutoff)]))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('mail_tokens as dead')
        .select('dead.id')
        .where((w) => w.or([w('dead.expires_at', '<', cutoff), w('dead.used_at', '<', cutoff)]))
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function deleteOldPageViews(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('page_views')
    .where('viewed_at', '<', cutoff)
    .where('id', 'in', (eb) => eb.selectFrom('page_views as old').select('old.id').where('old.viewed_at', '<', cutoff).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function deleteOldEvents(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('events')
    .where('created_at', '<', cutoff)
    .where('position', 'in', (eb) => eb.selectFrom('events as old').select('old.position').where('old.created_at', '<', cutoff).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

// Deliveries and runs are found by their ids, which grow with time (src/db/clock.ts, dbIdAgo): a range of
// the primary key in its order, with no index of their own that every delivery's writes would maintain. The
// inner select names no other column with an index, so that the planner walks that range (given
// `created_at`, it chose a whole index led by another column); the DELETE checks the age again.

type FinishedTable = 'webhook_deliveries' | 'bot_deliveries' | 'workflow_runs';

/**
 * Rows finished (not pending) that were made longer ago than retention and, where `touchedAt` names when a
 * row was last worked on after it was made, last worked on longer ago too.
 */
async function deleteFinished(
  trx: Tx,
  table: FinishedTable,
  idPrefix: string,
  touchedAt: 'last_attempt_at' | 'finished_at' | undefined,
  retentionMs: number,
  limit: number,
): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const untouched = (column: string) => sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} < ${cutoff})`;
  // Typed as the first of the three: the columns named here are in each, alike.
  const old = trx
    .selectFrom(`${table} as old` as 'webhook_deliveries as old')
    .select('old.id')
    .where('old.id', '<', dbIdAgo(idPrefix, retentionMs))
    .where('old.status', '<>', 'pending')
    .$if(touchedAt !== undefined, (qb) => qb.where(untouched(`old.${touchedAt}`)))
    .orderBy('old.id')
    .limit(limit);
  const result = await trx
    .deleteFrom(table as 'webhook_deliveries')
    .where('created_at', '<', cutoff)
    .where('status', '<>', 'pending')
    .$if(touchedAt !== undefined, (qb) => qb.where(untouched(touchedAt!)))
    .where(idIn('id', old))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Webhook deliveries finished (succeeded, or failed for good) that were made, and last attempted, longer ago
 * than retention. A pending one stays, whatever its age: a retry is due, or it was redelivered.
 */
export const deleteOldWebhookDeliveries = (trx: Tx, retentionMs: number, limit: number): Promise<number> =>
  deleteFinished(trx, 'webhook_deliveries', ID_PREFIXES.webhookDelivery, 'last_attempt_at', retentionMs, limit);

/** Bot deliveries finished longer ago than retention (made then: a bot delivery is never attempted again). */
export const deleteOldBotDeliveries = (trx: Tx, retentionMs: number, limit: number): Promise<number> =>
  deleteFinished(trx, 'bot_deliveries', ID_PREFIXES.botDelivery, undefined, retentionMs, limit);

/** Workflow runs finished (succeeded, failed or skipped) that were made, and finished, longer ago than retention. */
export const deleteOldWorkflowRuns = (trx: Tx, retentionMs: number, limit: number): Promise<number> =>
  deleteFinished(trx, 'workflow_runs', ID_PREFIXES.workflowRun, 'finished_at', retentionMs, limit);
