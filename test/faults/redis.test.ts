// Redis going away: requests never wait on it past their budget nor answer 500 because of it, events keep
// reaching every socket on every instance (read from the feed), and ended logins end everywhere at once.
// Each test runs a redis-server of its own on a free port; the shared one is never touched.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { RedisFeedWakeups } from '../../src/events/wakeups.ts';
import { openRedis } from '../../src/redis/link.ts';
import { createConversation, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { type Client, connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { EventBus } from '../../src/events/bus.ts';
import { buildApp } from '../../src/app.ts';
import { recordFigure } from './figures.ts';
import { auditMessages, call, type LoadTenant, ServiceProcess, setUpTenant, waitFor } from './support.ts';
import { RedisProcess } from '../support/redis-process.ts';

const SUITE = 'redis outage';

const wsUrl = (base: string) => `${base.replace(/^http/, 'ws')}/api/v1/ws`;
const createdIds = (client: Client) => client.frames.filter((f) => f.type === 'message.created').map((f) => f.data.message.id as string);

interface Answered {
  what: string;
  status: number | 'no answer';
  ms: number;
  retryAfter: string | null;
  /** Where the outage was when the request began. */
  at: string;
}

describe('Redis going away under load, over two instances', function () {
  const databaseUrl = process.env.DATABASE_URL;
  const redis = new RedisProcess();
  let a: ServiceProcess | undefined;
  let b: ServiceProcess | undefined;
  let direct: Database;
  const dataDirs: string[] = [];

  before(async function () {
    if (!databaseUrl) {
      console.log('    (skipped: two instances need PostgreSQL; set DATABASE_URL)');
      return this.skip();
    }
    await redis.start();
    direct = await openDatabase({ databaseUrl, dataDir: '.', poolMax: 2 });
    const env = async () => {
      const dir = await mkdtemp(join(tmpdir(), 'chat-redis-'));
      dataDirs.push(dir);
      return { DATABASE_URL: databaseUrl, DATA_DIR: dir, REDIS_URL: redis.url };
    };
    [a, b] = await Promise.all([ServiceProcess.start(await env()), ServiceProcess.start(await env())]);
  });

  after(async () => {
    for (const service of [a, b]) {
      const stopped = service?.kill('SIGTERM');
      const late = setTimeout(() => console.log(`the service did not stop within 20 s:\n${service?.output}`), 20_000);
      await stopped;
      clearTimeout(late);
    }
    await redis.stop();
    await direct?.close();
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
  });

  it('stopped for 5 s: no 500, every answer within 1 s (2xx, or 503 with Retry-After for tickets), 0 lost, 0 doubled, sockets on both instances get every message, /api/ready says Redis is down then up', async () => {
    const instances = [a!, b!];
    const tenant: LoadTenant = await setUpTenant(a!.base, 4);
    const sockets = await Promise.all(instances.flatMap((s) => [0, 1].map(() => connect(wsUrl(s.base), { Authorization: `Bearer ${tenant.token}` }))));
    const answered: Answered[] = [];
    const sent: Awaited<ReturnType<typeof send>>[] = [];
    const timed = async (what: string, run: () => Promise<{ status: number; headers: Headers }>) => {
      const started = performance.now();
      const res = await run().catch(() => undefined);
      answered.push({ what, status: res?.status ?? 'no answer', ms: performance.now() - started, retryAfter: res?.headers.get('retry-after') ?? null, at: phase });
      return res;
    };
    const send = async (base: string, conversationId: string) => {
      const key = randomUUID();
      const res = await timed('send', () =>
        call(base, 'POST', '/api/v1/messages', { token: tenant.token, headers: { 'Idempotency-Key': key }, body: { conversation_id: conversationId, content: `load ${key}` } }),
      );
      return { key, conversationId, status: res?.status ?? ('no answer' as const), messageId: (res as { body?: { id?: string } } | undefined)?.body?.id };
    };
    let loading = true;
    let phase = 'before';
    const workers = [
      ...tenant.conversationIds.map(async (conversationId, i) => {
        for (let n = 0; loading; n++) sent.push(await send(instances[(i + n) % 2]!.base, conversationId));
      }),
      (async () => {
        for (let n = 0; loading; n++) await timed('list', () => call(instances[n % 2]!.base, 'GET', '/api/v1/conversations?limit=5', { token: tenant.token }));
      })(),
      (async () => {
        for (let n = 0; loading; n++) await timed('ticket', () => call(instances[n % 2]!.base, 'POST', '/api/v1/ws/tickets', { token: tenant.token }));
      })(),
    ];
    const ok = () => sent.filter((s) => s.status === 201).length;
    const readiness = async (base: string) => (await call(base, 'GET', '/api/ready')).body?.checks?.redis as string | undefined;

    try {
      await waitFor('sends before the outage', () => ok() >= 40);
      // Up before the outage: a ping late under load (past REDIS_TIMEOUT_MS) reads as down for a second.
      await waitFor('both instances to report Redis up before the outage', async () => (await readiness(a!.base)) === 'ok' && (await readiness(b!.base)) === 'ok', 10_000);
      await redis.stop();
      phase = 'down';
      const cutAt = Date.now();
      const sentBeforeCut = sent.length;
      await waitFor('both instances to report Redis down', async () => (await readiness(a!.base)) === 'down' && (await readiness(b!.base)) === 'down', 5_000);
      // The outage lasts five seconds of continuous load: the fault, not a wait for a result.
      await waitFor('five seconds of outage', () => Date.now() - cutAt >= 5_000, 10_000);
      const duringOutage = sent.slice(sentBeforeCut).filter((s) => s.status === 201);
      // Delivered across instances while Redis is away: the streams read the feed without notifications.
      await waitFor(
        'every message sent during the outage on every socket, while Redis is still down',
        () => duringOutage.every((s) => sockets.every((c) => createdIds(c).includes(s.messageId!))),
        5_000,
      );
      await redis.start();
      phase = 'back';
      await waitFor('both instances to report Redis up', async () => (await readiness(a!.base)) === 'ok' && (await readiness(b!.base)) === 'ok', 10_000);
      const okAtRestore = ok();
      await waitFor('sends after Redis is back', () => ok() >= okAtRestore + 40);
      loading = false;
      await Promise.all(workers);

      const last = await send(a!.base, tenant.conversationIds[0]!);
      sent.push(last);
      await waitFor('every answered message on every socket', () => sockets.every((c) => sent.every((s) => s.status !== 201 || createdIds(c).includes(s.messageId!))), 10_000);

      const audit = await auditMessages(direct, tenant.tenantId, sent as never);
      const failures = answered.filter((x) => x.status === 'no answer' || (x.status >= 500 && x.status !== 503));
      const unavailable = answered.filter((x) => x.status === 503);
      // Measured from the outage on: before it, the instances' first requests compile what they use.
      const slow = answered.filter((x) => x.at !== 'before' && x.ms > 1_000);
      const doubledOnSockets = sockets.filter((c) => new Set(createdIds(c)).size !== createdIds(c).length).length;
      recordFigure(SUITE, 'requests answered', answered.length);
      recordFigure(SUITE, '503 answers (tickets)', unavailable.length);
      recordFigure(SUITE, 'slowest answer, ms', Math.round(Math.max(...answered.map((x) => x.ms))));
      recordFigure(SUITE, 'messages sent during the outage', duringOutage.length);
      expect(failures, 'no answer or a 5xx other than 503').to.deep.equal([]);
      expect(slow.map((x) => `${x.what} ${x.status} ${Math.round(x.ms)} ms, Redis ${x.at}`), 'answers slower than 1 s').to.deep.equal([]);
      expect(unavailable.filter((x) => x.what !== 'ticket'), 'only tickets need Redis').to.deep.equal([]);
      expect(unavailable.every((x) => Number(x.retryAfter) > 0), '503 with Retry-After').to.equal(true);
      expect(unavailable.length, 'tickets refused while Redis was away').to.be.greaterThan(0);
      expect(answered.some((x) => x.what === 'ticket' && x.at === 'back' && x.status === 201), 'tickets again once Redis is back').to.equal(true);
      expect(duringOutage.length, 'sends went on during the outage').to.be.greaterThan(10);
      expect(audit.lost).to.equal(0);
      expect(audit.doubled).to.equal(0);
      expect(audit.eventsWrong).to.equal(0);
      expect(doubledOnSockets, 'a message twice on a socket').to.equal(0);
    } finally {
      loading = false;
      await Promise.all(workers);
      for (const c of sockets) c.close();
      await redis.start();
    }
  });

  it('a logout on one instance while Redis is away: the token is refused on the other at its next request', async () => {
    await redis.start();
    const tenant = await setUpTenant(a!.base, 0);
    // B has checked the login once and would remember it.
    expect((await call(b!.base, 'GET', '/api/v1/conversations', { token: tenant.token })).status).to.equal(200);
    await redis.stop();
    try {
      await waitFor('B to report Redis down', async () => (await call(b!.base, 'GET', '/api/ready')).body?.checks?.redis === 'down', 5_000);
      expect((await call(a!.base, 'POST', '/api/v1/auth/logout', { body: { refresh_token: tenant.refreshToken } })).status).to.equal(200);
      const after = await call(b!.base, 'GET', '/api/v1/conversations', { token: tenant.token });
      expect(after.status).to.equal(401);
    } finally {
      await redis.start();
    }
  });
});

describe('Redis cutting only the subscribed connections', function () {
  const redis = new RedisProcess();
  let one: RealtimeServer;
  let two: RealtimeServer;

  before(async () => {
    await redis.start();
    one = await startRealtime({ redisUrl: redis.url });
    two = await startRealtime({ redisUrl: redis.url });
  });

  after(async () => {
    await one?.close();
    await two?.close();
    await redis.stop();
  });

  it('a message sent through instance A into a quiet tenant reaches every socket on instance B within 1 s, 20 times out of 20', async () => {
    const t: TestTenant = await createTenant();
    const token = t.owner.accessToken;
    const conversation = await createConversation(t, {}, token, one.app);
    const sockets = await Promise.all([0, 1, 2].map(() => connect(two.wsUrl, { Authorization: `Bearer ${token}` })));
    const latencies: number[] = [];
    try {
      for (let round = 0; round < 20; round++) {
        const killed = await redis.killSubscribers();
        expect(killed, 'subscribed connections cut').to.be.greaterThan(0);
        const started = performance.now();
        const res = await request(one.app).post('/api/v1/messages').set('Authorization', `Bearer ${token}`).send({ conversation_id: conversation.id, content: `round ${round}` }).expect(201);
        await Promise.all(sockets.map((c) => c.next((f) => f.type === 'message.created' && f.data.message.id === res.body.id)));
        latencies.push(performance.now() - started);
      }
    } finally {
      for (const c of sockets) c.close();
    }
    recordFigure(SUITE, 'subscribers cut: slowest delivery to B, ms', Math.round(Math.max(...latencies)));
    expect(latencies.filter((ms) => ms > 1_000), 'deliveries slower than 1 s').to.deep.equal([]);
  });

  it('a webhook delivery woken from another instance goes out within 1 s, 20 times out of 20', async () => {
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    const linkA = await openRedis(redis.url, { timeoutMs: 1_000, onError: () => undefined });
    const linkB = await openRedis(redis.url, { timeoutMs: 1_000, onError: () => undefined });
    const wakeupsA = await RedisFeedWakeups.create(linkA);
    const wakeupsB = await RedisFeedWakeups.create(linkB);
    // Instance A makes the events and has no dispatcher; B's bus hears nothing, and it polls once an hour.
    const stopRelay = wakeupsA.relay(bus);
    const receiver = await startReceiver();
    const dispatcher = testDispatcher(h, { bus: new EventBus(), pollMs: 3_600_000, wakeups: wakeupsB });
    const latencies: number[] = [];
    try {
      const t = await createTenant();
      const token = t.owner.accessToken;
      const hook = (await request(app).post('/api/v1/webhooks').set('Authorization', `Bearer ${token}`).send({ url: receiver.url, events: ['message.created'] }).expect(201)).body;
      receiver.secrets.push(hook.secret);
      const conversation = await createConversation(t, {}, token, app);
      // The cursor exists before the messages (a first pass starts at the head of the feed).
      await dispatcher.fanOutOnce();
      dispatcher.start();
      for (let round = 0; round < 20; round++) {
        const killed = await redis.killSubscribers();
        expect(killed).to.be.greaterThan(0);
        const started = performance.now();
        const sent = (await request(app).post('/api/v1/messages').set('Authorization', `Bearer ${token}`).send({ conversation_id: conversation.id, content: `round ${round}` }).expect(201)).body;
        await receiver.until((got) => got.some((d) => d.verified?.data?.message?.id === sent.id && d.answered === 200), 5_000);
        latencies.push(performance.now() - started);
      }
    } finally {
      stopRelay();
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', '=', receiver.url).execute());
      await receiver.close();
      await wakeupsA.close();
      await wakeupsB.close();
      linkA.close();
      linkB.close();
    }
    recordFigure(SUITE, 'subscribers cut: slowest webhook wake-up, ms', Math.round(Math.max(...latencies)));
    expect(latencies.filter((ms) => ms > 1_000), 'deliveries slower than 1 s').to.deep.equal([]);
  });
});
