import type { Express } from 'express';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import { WorkflowRunner } from '../../src/workflows/workflow.runner.ts';
import { getHarness } from './harness.ts';

export interface WorkflowApp {
  app: Express;
  runner: WorkflowRunner;
  /** Stops the runner and deletes the named tenants' workflows: on a shared PostgreSQL database, runs left pending would be retried by the next file's runner. */
  stop(tenantIds: string[]): Promise<void>;
}

/** The test app on a bus of its own, with a workflow runner like the service's polling every 50 ms. */
export async function startWorkflowApp(options: { retryDelaysMs?: number[] } = {}): Promise<WorkflowApp> {
  const h = await getHarness();
  const bus = new EventBus();
  const built = buildApp({ ...h.deps, bus });
  const runner = new WorkflowRunner({
    database: h.database,
    logger: pino({ level: 'silent' }),
    bus,
    mailer: h.deps.mailer,
    conversations: built.services.conversations,
    allowPrivate: true,
    timeoutMs: 400,
    retryDelaysMs: options.retryDelaysMs ?? [50, 100],
    pollMs: 50,
  });
  runner.start();
  return {
    app: built.app,
    runner,
    stop: async (tenantIds) => {
      await runner.stop();
      if (tenantIds.length > 0) await h.database.asSystem((trx) => trx.deleteFrom('workflows').where('tenant_id', 'in', tenantIds).execute());
    },
  };
}
