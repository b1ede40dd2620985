import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type RawBuilder, sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { recordFigure } from './figures.ts';
import { call, type LoadTenant, ServiceProcess, setUpTenant, waitFor } from './support.ts';

/**
 * conversation.idle across real restarts of `node src/server.ts` on one embedded data directory: the
 * idle check is a scheduled job whose schedule and marks live in the database, so a silence fires once
 * whatever kills come between, and silences that began while the service was down fire after it starts.
 * Time is moved in the database while the service is down (the embedded database is one process's).
 */
describe('workflows: conversation.idle across kill -9 and restarts', function () {
  this.timeout(240_000);
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'chat-wf-idle-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Changes the stopped service's database as its owner (row-level security does not apply). */
  async function whileDown(queries: RawBuilder<unknown>[]) {
    const database = await openDatabase({ databaseUrl: undefined, dataDir, poolMax: 1 });
    try {
      for (const q of queries) await q.execute(database.db);
    } finally {
      await database.close();
    }
  }

  const idleEventsOf = async (base: string, tenant: LoadTenant, conversationId: string) =>
    ((await call(base, 'GET', '/api/v1/events?limit=100', { token: tenant.token })).body.data as { type: string; data: { conversation_id: string } }[]).filter(
      (e) => e.type === 'conversation.idle' && e.data.conversation_id === conversationId,
    );

  it('fires a silence once across kill -9, and fires silences that began while the service was down', async () => {
    const env = { DATA_DIR: dataDir };
    const first = await ServiceProcess.start(env);
    const tenant = await setUpTenant(first.base, 2);
    const [quiet, later] = tenant.conversationIds as [string, string];
    const created = await call(first.base, 'POST', '/api/v1/workflows', {
      token: tenant.token,
      body: { name: 'Nudge', trigger: { type: 'conversation.idle', minutes: 10 }, actions: [{ type: 'send_message', content: 'Still there?' }] },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const workflowId: string = created.body.id;
    await first.kill('SIGKILL');

    // Ten minutes pass for one conversation while the service is down.
    await whileDown([
      sql`update workflows set created_at = now() - interval '1 day' where id = ${workflowId}`,
      sql`update conversations set last_visitor_message_at = now() - interval '11 minutes' where id = ${quiet}`,
    ]);
    const startedAt = Date.now();
    const second = await ServiceProcess.start(env);
    await waitFor('the idle event after the restart', async () => (await idleEventsOf(second.base, tenant, quiet)).length > 0, 120_000);
    recordFigure('workflows idle', 'restart to idle event (ms)', Date.now() - startedAt);
    await waitFor('the run to succeed', async () => {
      const runs = (await call(second.base, 'GET', `/api/v1/workflows/${workflowId}/runs`, { token: tenant.token })).body.data as { status: string }[];
      return runs.length === 1 && runs[0]!.status === 'succeeded';
    });
    await second.kill('SIGKILL');

    // The next check is made due at once, and another conversation goes quiet, while it is down again.
    await whileDown([
      sql`update scheduled_jobs set next_run_at = now(), locked_until = null where name = 'workflows.idle'`,
      sql`update conversations set last_visitor_message_at = now() - interval '12 minutes' where id = ${later}`,
    ]);
    const third = await ServiceProcess.start(env);
    await waitFor('the second silence to fire', async () => (await idleEventsOf(third.base, tenant, later)).length > 0, 120_000);
    const quietEvents = await idleEventsOf(third.base, tenant, quiet);
    const runs = (await call(third.base, 'GET', `/api/v1/workflows/${workflowId}/runs`, { token: tenant.token })).body.data as { conversation_id: string }[];
    const messages = (await call(third.base, 'GET', `/api/v1/messages/${quiet}?limit=100`, { token: tenant.token })).body.data as { content: string }[];
    await third.kill('SIGTERM');
    expect(third.exit, third.output).to.deep.equal({ code: 0, signal: null });
    recordFigure('workflows idle', 'idle events for the first silence', quietEvents.length);
    expect(quietEvents, 'the first silence fired once').to.have.length(1);
    expect(runs.map((r) => r.conversation_id).sort()).to.deep.equal([quiet, later].sort());
    expect(messages.filter((m) => m.content === 'Still there?')).to.have.length(1);
  });
});
