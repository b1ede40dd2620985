import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { loadConfig } from '../src/config.ts';
import { type RunningService, startService } from '../src/server.ts';
import { TEST_JWT_SECRET, getHarness } from './support/harness.ts';
import { expectProblem } from './support/problem.ts';
import { connect } from './support/realtime.ts';
import { uniqueEmail, PASSWORD } from './support/factories.ts';

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

      expect(sample(text, 'chat_events_written_total', { type: 'conversation.created' })).to.equal(1);
      expect(sample(text, 'chat_events_written_total', { type: 'message.created' })).to.equal(1);
      expect(sample(text, 'chat_events_delivered_total', { audience: 'member' })).to.be.greaterThan(deliveredBefore);
      expect(sample(text, 'chat_event_delivery_lag_seconds_count')).to.be.at.least(1);

      expect(sample(text, 'chat_db_pool_connections', { state: 'in_use' })).to.be.a('number');
      expect(sample(text, 'chat_db_pool_connections', { state: 'idle' })).to.be.at.least(1);
      expect(sample(text, 'chat_db_pool_waiting')).to.equal(0);
      expect(sample(text, 'process_cpu_user_seconds_total')).to.be.greaterThan(0);
      expect(sample(text, 'nodejs_eventloop_lag_seconds')).to.be.a('number');
    } finally {
      socket.close();
      await socket.closed;
    }
    const after = await scrape();
    expect(sample(after, 'chat_websocket_connections', { audience: 'member' })).to.equal(0);
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
