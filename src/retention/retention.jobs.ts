import type { Database, Tx } from '../db/database.ts';
import { deleteOrphanFiles } from '../files/file.service.ts';
import type { FileStorage } from '../files/storage.ts';
import type { Job } from '../jobs/scheduler.ts';
import * as repo from './retention.repository.ts';

export interface RetentionPeriods {
  /** How often each retention job runs. */
  intervalMs: number;
  idempotencyKeyMs: number;
  /** Kept this long after a refresh token expired or was revoked. */
  refreshTokenMs: number;
  /** Kept this long after a mail token was used or expired. */
  mailTokenMs: number;
  pageViewMs: number;
  eventMs: number;
  /** Finished webhook deliveries, bot deliveries and workflow runs are kept this long. */
  deliveryMs: number;
}

/** Rows deleted per statement: each batch is its own short transaction, however large the backlog. */
export const RETENTION_BATCH = 5_000;

type DeleteBatch = (trx: Tx, periodMs: number, limit: number) => Promise<number>;

function pruneJob(name: string, intervalMs: number, periodMs: number, deleteBatch: DeleteBatch, batch: number): Job {
  return {
    name,
    intervalMs,
    run: async (database: Database, signal: AbortSignal) => {
      let deleted = 0;
      for (;;) {
        const n = await database.asSystem((trx) => deleteBatch(trx, periodMs, batch));
        deleted += n;
        if (n < batch || signal.aborted) return { deleted };
      }
    },
  };
}

/** One job per table, so a failure in one does not hold back the others. */
export function retentionJobs(periods: RetentionPeriods, options: { batch?: number } = {}): Job[] {
  const batch = options.batch ?? RETENTION_BATCH;
  const every = periods.intervalMs;
  return [
    pruneJob('retention.idempotency_keys', every, periods.idempotencyKeyMs, repo.deleteOldIdempotencyKeys, batch),
    pruneJob('retention.refresh_tokens', every, periods.refreshTokenMs, repo.deleteDeadRefreshTokens, batch),
    pruneJob('retention.mail_tokens', every, periods.mailTokenMs, repo.deleteDeadMailTokens, batch),
    pruneJob('retention.page_views', every, periods.pageViewMs, repo.deleteOldPageViews, batch),
    pruneJob('retention.events', every, periods.eventMs, repo.deleteOldEvents, batch),
    pruneJob('retention.webhook_deliveries', every, periods.deliveryMs, repo.deleteOldWebhookDeliveries, batch),
    pruneJob('retention.bot_deliveries', every, periods.deliveryMs, repo.deleteOldBotDeliveries, batch),
    pruneJob('retention.workflow_runs', every, periods.deliveryMs, repo.deleteOldWorkflowRuns, batch),
  ];
}

/** Files fetched per batch by the orphan job: each object is removed before its row, inside the batch's transaction. */
export const ORPHAN_FILE_BATCH = 100;

/**
 * Deletes files never attached to a message within `ageMs` of their upload (FILE_ORPHAN_HOURS), object
 * first, then row. A batch holds its rows locked (a message attaching one of them meanwhile waits, then
 * finds it gone: 404) and skips rows a request holds. If the commit fails after the objects went, the
 * rows stay and the next run removes the (already missing) objects again and deletes them.
 */
export function orphanFileJob(storage: FileStorage, options: { intervalMs: number; ageMs: number; batch?: number }): Job {
  const batch = options.batch ?? ORPHAN_FILE_BATCH;
  return {
    name: 'retention.orphan_files',
    intervalMs: options.intervalMs,
    run: (database: Database, signal: AbortSignal) => deleteOrphanFiles(database, storage, { ageMs: options.ageMs, batch, signal }),
  };
}
