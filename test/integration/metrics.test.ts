import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { loadConfig } from '../../src/config.ts';
import { Metrics } from '../../src/metrics/metrics.ts';
import { type RunningService, startService } from '../../src/server.ts';
import { TEST_JWT_SECRET, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { connect } from '../support/realtime.ts';
import { uniqueEmail, PASSWORD } from '../support/factories.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const METRICS_TOKEN = 'metrics-token-for-the-tests-0123456789';

/** The value of one series in Prometheus text, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('metrics', () => {
  // The service as server.ts wires it: its gateway, pool and bus report to the one registry.
  let dir: string;
  let service: RunningService;

  before(async function () {
    this.timeout(60_000);
    dir = await mkdtemp(join(tmpdir(), 'chat-metrics-'));
    service = await startService(
      loadConfig({
        JWT_SECRET: TEST_JWT_SECRET,
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: dir,
        DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
        LOG_LEVEL: 'silent',
        BCRYPT_COST: '4',
        METRICS_TOKEN,
        // The receivers are on loopback; a failed delivery waits an hour, so it stays scheduled through the test.
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SCHEDULE: '1h',
        WEBHOOK_POLL_MS: '100',
        // The hanging attempt stays in flight however slow the machine: it must not time out into a second failure.
        WEBHOOK_TIMEOUT_MS: '60000',
        // Every scrape reads the queues: a test looks again right after a change.
        METRICS_QUEUE_CACHE_MS: '0',
      }),
    );
  });
  after(async () => {
    await service?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const scrape = async () => {
    const res = await request(service.url).get('/api/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`).expect(200);
    expect(res.headers['content-type']).to.match(/^text\/plain; version=0\.0\.4/);
    return res.text;
  };

  it('counts a flow by operation and status, sockets by audience, events written and delivered with their lag', async () => {
    const api = request(service.url);
    const reg = await api
      .post('/api/v1/auth/register')
      .send({ email: uniqueEmail('metrics'), password: PASSWORD, name: 'Owner', tenant_name: 'Metrics' })
      .expect(201);
    const auth = { Authorization: `Bearer ${reg.body.access_token}` };
    const contact = await api.post('/api/v1/contacts').set(auth).send({ name: 'Vera', email: uniqueEmail('contact') }).expect(201);
    const conv = await api.post('/api/v1/conversations').set(auth).send({ contact_id: contact.body.id }).expect(201);
    await api.get(`/api/v1/conversations/${conv.body.id}`).set(auth).expect(200);
    await api.get('/api/v1/conversations/conv_01935d6e-0000-7000-8000-000000000000').set(auth).expect(404);
    await api.get('/api/no/such/route/4711').expect(404);

    const socket = await connect(service.url.replace(/^http/, 'ws') + '/api/v1/ws', auth);
    try {
      const before = await scrape();
      expect(sample(before, 'chat_websocket_connections', { audience: 'member' })).to.equal(1);
      expect(sample(before, 'chat_websocket_connections', { audience: 'visitor' })).to.equal(0);
      const deliveredBefore = sample(before, 'chat_events_delivered_total', { audience: 'member' }) ?? 0;

      await api.post('/api/v1/messages').set(auth).send({ conversation_id: conv.body.id, content: 'measured' }).expect(201);
      await socket.next((f) => f.type === 'message.created');
      const text = await scrape();

      expect(sample(text, 'http_requests_total', { operation: 'register', status: '201' })).to.equal(1);
      expect(sample(text, 'http_requests_total', { operation: 'getConversation', status: '200' })).to.equal(1);
      expect(sample(text, 'http_requests_total', { operation: 'getConversation', status: '404' })).to.equal(1);
      expect(sample(text, 'http_requests_total', { operation: 'sendMessage', status: '201' })).to.equal(1);
      expect(sample(text, 'http_request_duration_seconds_count', { operation: 'sendMessage', status: '201' })).to.equal(1);
      expect(sample(text, 'http_request_duration_seconds_bucket', { operation: 'sendMessage', status: '201', le: '+Inf' })).to.equal(1);
      // Routes by template: an unmatched path is one label, and no raw URL or id becomes a label.
      expect(sample(text, 'http_requests_total', { operation: 'unmatched', status: '404' })).to.be.at.least(1);
      expect(sample(text, 'http_requests_total', { operation: 'GET /api/metrics', status: '200' })).to.be.at.least(1);
      // Only label sets are looked at: a sample's value (bytes, seconds) may contain any digits.
      const labels = text.split('\n').flatMap((line) => /\{[^}]*\}/.exec(line) ?? []).join('\n');
      expect(labels).not.to.contain('4711');
      expect(labels).not.to.contain(conv.body.id);

      // At least: on a shared PostgreSQL this instance's scheduled jobs also act for other tests' tenants (the
      // return timer's notice, a bot's answer), and those events count here too.
      expect(sample(text, 'chat_events_written_total', { type: 'conversation.created' })).to.be.at.least(1);
      const written = (scraped: string) => sample(scraped, 'chat_events_written_total', { type: 'message.created' }) ?? 0;
      expect(written(text) - written(before), 'the send counted').to.be.at.least(1);
      expect(sample(text, 'chat_events_delivered_total', { audience: 'member' })).to.be.greaterThan(deliveredBefore);
      expect(sample(text, 'chat_event_delivery_lag_seconds_count')).to.be.at.least(1);

      // In use or idle: the embedded database's one connection may be a background reader's at the scrape.
      expect(sample(text, 'chat_db_pool_connections', { state: 'in_use' })).to.be.a('number');
      expect(sample(text, 'chat_db_pool_connections', { state: 'in_use' })! + sample(text, 'chat_db_pool_connections', { state: 'idle' })!).to.be.at.least(1);
      expect(sample(text, 'chat_db_pool_waiting')).to.be.a('number');
      expect(sample(text, 'process_cpu_user_seconds_total')).to.be.greaterThan(0);
      expect(sample(text, 'nodejs_eventloop_lag_seconds')).to.be.a('number');
    } finally {
      socket.close();
      await socket.closed;
    }
    const after = await scrape();
    expect(sample(after, 'chat_websocket_connections', { audience: 'member' })).to.equal(0);
  });

  it('reports the webhook, workflow and bot queues: depth by state, the oldest due age, outcomes by label', async function () {
    this.timeout(30_000);
    const api = request(service.url);
    const reg = await api
      .post('/api/v1/auth/register')
      .send({ email: uniqueEmail('queues'), password: PASSWORD, name: 'Owner', tenant_name: 'Queues' })
      .expect(201);
    const auth = { Authorization: `Bearer ${reg.body.access_token}` };
    const receivers: Receiver[] = [];
    try {
      const accepting = await startReceiver();
      const refusing = await startReceiver({ behave: () => 500 });
      // An attempt that hangs keeps its delivery due (in flight): the oldest due age grows while it waits.
      let arrived!: () => void;
      const hangingArrived = new Promise<void>((resolve) => (arrived = resolve));
      const hanging = await startReceiver({
        behave: () => {
          arrived();
          return 'hang';
        },
      });
      receivers.push(accepting, refusing, hanging);
      const hook = async (r: Receiver) =>
        (await api.post('/api/v1/webhooks').set(auth).send({ url: r.url, events: ['conversation.created'] }).expect(201)).body as { id: string };
      const [ok, refused] = [await hook(accepting), await hook(refusing)];
      await hook(hanging);
      const workflow = (await api.post('/api/v1/workflows').set(auth).send({ name: 'Close', trigger: { type: 'message.created' }, actions: [{ type: 'close' }] }).expect(201))
        .body as { id: string };

      const contact = await api.post('/api/v1/contacts').set(auth).send({ name: 'Queue', email: uniqueEmail('contact') }).expect(201);
      const conv = await api.post('/api/v1/conversations').set(auth).send({ contact_id: contact.body.id }).expect(201);
      await api.post('/api/v1/messages').set(auth).send({ conversation_id: conv.body.id, content: 'counted' }).expect(201);

      const deliveries = async (id: string) =>
        (await api.get(`/api/v1/webhooks/${id}/deliveries`).set(auth).expect(200)).body.data as { status: string; attempts: number }[];
      await eventually(async () => (await deliveries(ok.id)).some((d) => d.status === 'succeeded'), 'the accepted delivery to be recorded');
      await eventually(async () => (await deliveries(refused.id)).some((d) => d.status === 'pending' && d.attempts === 1), 'the refused delivery to be recorded for a retry');
      await hangingArrived;
      await eventually(
        async () => ((await api.get(`/api/v1/workflows/${workflow.id}/runs`).set(auth).expect(200)).body.data as { status: string }[]).some((r) => r.status === 'succeeded'),
        'the workflow run to finish',
      );

      const text = await scrape();
      // Counters are this instance's, and only this test's tenant has endpoints and workflows (one event each): exact.
      expect(sample(text, 'chat_webhook_deliveries_total', { outcome: 'delivered' })).to.equal(1);
      expect(sample(text, 'chat_webhook_deliveries_total', { outcome: 'failed_retrying' })).to.equal(1);
      expect(sample(text, 'chat_webhook_deliveries_total', { outcome: 'failed_final' }), 'no final failure, no series').to.equal(undefined);
      expect(sample(text, 'chat_workflow_actions_total', { action: 'close', outcome: 'succeeded' })).to.equal(1);
      // Depth counts the whole database (a PostgreSQL test database may hold other files' rows): at least ours.
      expect(sample(text, 'chat_webhook_deliveries_pending', { state: 'scheduled' })).to.be.at.least(1);
      expect(sample(text, 'chat_webhook_deliveries_pending', { state: 'due' })).to.be.at.least(1);
      expect(sample(text, 'chat_webhook_deliveries_pending', { state: 'held' })).to.be.a('number');
      expect(sample(text, 'chat_webhook_oldest_due_seconds')).to.be.greaterThan(0);
      expect(sample(text, 'chat_workflow_runs_pending', { state: 'due' })).to.be.a('number');
      expect(sample(text, 'chat_workflow_runs_pending', { state: 'scheduled' })).to.be.a('number');
      expect(sample(text, 'chat_workflow_oldest_due_seconds')).to.be.at.least(0);
      expect(sample(text, 'chat_bot_deliveries_pending', { state: 'due' })).to.be.a('number');
      expect(sample(text, 'chat_bot_deliveries_pending', { state: 'scheduled' })).to.be.a('number');
      expect(sample(text, 'chat_bot_oldest_due_seconds')).to.be.at.least(0);
      // No URL, port, id or tenant becomes a label.
      const labels = text.split('\n').flatMap((line) => /\{[^}]*\}/.exec(line) ?? []).join('\n');
      for (const r of receivers) expect(labels).not.to.contain(new URL(r.url).port);
      for (const id of [ok.id, refused.id, workflow.id, conv.body.id, reg.body.tenant?.id ?? 'tn_']) expect(labels).not.to.contain(id);
    } finally {
      for (const r of receivers) await r.close();
    }
  });

  it('refuses anonymous callers and wrong tokens with 401', async () => {
    expectProblem(await request(service.url).get('/api/metrics'), 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(service.url).get('/api/metrics').set('Authorization', 'Bearer not-the-token'), 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(service.url).get('/api/metrics').set('Authorization', `Basic ${METRICS_TOKEN}`), 401, 'ERR_UNAUTHENTICATED');
  });

  it('does not exist without METRICS_TOKEN', async () => {
    const { app } = await getHarness();
    expectProblem(await request(app).get('/api/metrics'), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).get('/api/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`), 404, 'ERR_NOT_FOUND');
  });
});

describe('Metrics.observeQueue', () => {
  const names = [
    { name: 'chat_test_pending', help: 'test queue' },
    { name: 'chat_test_oldest_due_seconds', help: 'test queue age' },
  ] as const;

  it('reads the queue once for both gauges and for scrapes within the cache time', async () => {
    const metrics = new Metrics({ queueCacheMs: 60_000 });
    let reads = 0;
    metrics.observeQueue(names[0], names[1], async () => {
      reads++;
      return { states: { due: 3, scheduled: 2 }, oldestDueSeconds: 42 };
    });
    const first = await metrics.render();
    await metrics.render();
    expect(reads).to.equal(1);
    expect(sample(first, 'chat_test_pending', { state: 'due' })).to.equal(3);
    expect(sample(first, 'chat_test_pending', { state: 'scheduled' })).to.equal(2);
    expect(sample(first, 'chat_test_oldest_due_seconds')).to.equal(42);
  });

  it('answers the scrape without the queue while the database fails, and reads again at the next scrape', async () => {
    const metrics = new Metrics({ queueCacheMs: 60_000 });
    let fail = true;
    metrics.observeQueue(names[0], names[1], async () => {
      if (fail) throw new Error('the database is away');
      return { states: { due: 1 }, oldestDueSeconds: 7 };
    });
    const down = await metrics.render();
    expect(sample(down, 'chat_test_pending', { state: 'due' })).to.equal(undefined);
    expect(sample(down, 'chat_test_oldest_due_seconds')).to.be.NaN;
    fail = false;
    const up = await metrics.render();
    expect(sample(up, 'chat_test_pending', { state: 'due' })).to.equal(1);
    expect(sample(up, 'chat_test_oldest_due_seconds')).to.equal(7);
  });
});
