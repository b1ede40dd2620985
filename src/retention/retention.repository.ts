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

/**
 * Webhook deliveries finished (succeeded, or failed for good) that were made, and last attempted, longer ago
 * than retention. A pending one stays, whatever its age: a retry is due, or it was redelivered.
 */
export async function deleteOldWebhookDeliveries(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('webhook_deliveries')
    .where('created_at', '<', cutoff)
    .where('status', '<>', 'pending')
    .where((eb) => eb.or([eb('last_attempt_at', 'is', null), eb('last_attempt_at', '<', cutoff)]))
    .where(
      idIn(
        'id',
        trx
          .selectFrom('webhook_deliveries as old')
          .select('old.id')
          .where('old.id', '<', dbIdAgo(ID_PREFIXES.webhookDelivery, retentionMs))
          .where('old.status', '<>', 'pending')
          .where((eb) => eb.or([eb('old.last_attempt_at', 'is', null), eb('old.last_attempt_at', '<', cutoff)]))
          .orderBy('old.id')
          .limit(limit),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Bot deliveries finished longer ago than retention (made then: a bot delivery is never attempted again). */
export async function deleteOldBotDeliveries(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('bot_deliveries')
    .where('created_at', '<', cutoff)
    .where('status', '<>', 'pending')
    .where(
      idIn(
        'id',
        trx
          .selectFrom('bot_deliveries as old')
          .select('old.id')
          .where('old.id', '<', dbIdAgo(ID_PREFIXES.botDelivery, retentionMs))
          .where('old.status', '<>', 'pending')
          .orderBy('old.id')
          .limit(limit),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Workflow runs finished (succeeded, failed or skipped) that were made, and finished, longer ago than retention. */
export async function deleteOldWorkflowRuns(trx: Tx, retentionMs: number, limit: number): Promise<number> {
  const cutoff = dbAgo(retentionMs);
  const result = await trx
    .deleteFrom('workflow_runs')
    .where('created_at', '<', cutoff)
    .where('status', '<>', 'pending')
    .where((eb) => eb.or([eb('finished_at', 'is', null), eb('finished_at', '<', cutoff)]))
    .where(
      idIn(
        'id',
        trx
          .selectFrom('workflow_runs as old')
          .select('old.id')
          .where('old.id', '<', dbIdAgo(ID_PREFIXES.workflowRun, retentionMs))
          .where('old.status', '<>', 'pending')
          .where((eb) => eb.or([eb('old.finished_at', 'is', null), eb('old.finished_at', '<', cutoff)]))
          .orderBy('old.id')
          .limit(limit),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
