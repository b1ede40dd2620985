import type { Job } from '../jobs/scheduler.ts';
import * as repo from './report.repository.ts';

export const FOLD_JOB = 'reports.fold';
const TENANTS_PER_ROUND = 100;

/**
 * Folds every tenant's waiting facts into their rollups (migration 2026-12-02T09-00-00), each tenant in a
 * transaction of its own. Reports fold their tenant's before they read, so this only keeps the waiting
 * facts few: a report never folds more than what came in since the last run.
 */
export function foldJob(intervalMs: number): Job {
  return {
    name: FOLD_JOB,
    intervalMs,
    run: async (database, signal) => {
      let tenants = 0;
      let folded = 0;
      for (;;) {
        const waiting = await database.asSystem((trx) => repo.tenantsWithPendingFacts(trx, TENANTS_PER_ROUND));
        for (const tenantId of waiting) {
          if (signal.aborted) return { tenants, folded };
          folded += await database.withTenant(tenantId, (trx) => repo.foldPendingFacts(trx, tenantId));
          tenants++;
        }
        if (waiting.length < TENANTS_PER_ROUND) return { tenants, folded };
      }
    },
  };
}
