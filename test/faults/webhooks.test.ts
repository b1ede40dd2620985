import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';
import { type Transport, createTransport } from '../../src/delivery/transport.ts';
import { createConversation, createTenant } from '../support/factories.ts';
import { getHarness, openExtraDatabase } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';
import { recordFigure } from './figures.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/**
 * The fault suite shares its database with the tests before it, whose endpoints (the fuzz's among them)
 * would otherwise take the dispatchers' time with thousands of hopeless deliveries. As the database's
 * superuser (row-level security is forced for everyone else), they are disabled and the dispatch cursor
 * starts afresh at the head of the feed.
 */
async function quietEarlierEndpoints(): Promise<void> {
  const url = new URL(process.env.DATABASE_URL!);
  url.username = 'postgres';
  url.password = '';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`UPDATE webhooks SET enabled = false, disabled_reason = 'manual', disabled_at = now() WHERE enabled`);
    await admin.query('DELETE FROM webhook_deliveries');
    await admin.query('DELETE FROM feed_cursors');
  } finally {
    await admin.end();
  }
}

describe('webhooks under faults', () => {
  before(async function () {
    if (process.env.DATABASE_URL) await quietEarlierEndpoints();
  });
  const receivers: Receiver[] = [];
  afterEach(async () => {
    for (const r of receivers.splice(0)) await r.close();
  });

  it('two instances on PostgreSQL share the work; no delivery is attempted twice at once, none is lost', async function () {
    if (!process.env.DATABASE_URL) this.skip();
    this.timeout(120_000);
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    // Every fifth request fails, so retries run beside first attempts.
    let n = 0;
    const r = await startReceiver({ behave: () => (++n % 5 === 0 ? 503 : 'ok') });
    receivers.push(r);
    const counted = (label: string, counts: Record<string, number>): Transport => {
      const inner = createTransport({ allowPrivate: true, timeoutMs: 2000 });
      return {
        post: (url, headers, body) => {
          counts[label] = (counts[label] ?? 0) + 1;
          return inner.post(url, headers, body);
        },
        close: () => inner.close(),
      };
    };
    const attemptsBy: Record<string, number> = {};
    const dispatchers = await Promise.all(
      ['a', 'b'].map(async (label) => {
        const database = await openExtraDatabase(process.env.DATABASE_URL);
        return new WebhookDispatcher({
          database,
          logger: pino({ level: process.env.WEBHOOK_LOG ?? 'silent' }),
          bus,
          mailer: h.deps.mailer,
          allowPrivate: true,
          retryDelaysMs: [20, 40, 80, 160, 320],
          pollMs: 20,
          concurrency: 8,
          transport: counted(label, attemptsBy),
        });
      }),
    );
    for (const d of dispatchers) d.start();
    try {
      const t = await createTenant();
      const hook = (await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: r.url, events: ['message.created'] }).expect(201)).body;
      r.secrets.push(hook.secret);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      const MESSAGES = 300;
      for (let i = 0; i < MESSAGES; i += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, j) =>
            request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: `m${i + j}` }).expect(201),
          ),
        );
      }
      // Only this endpoint's deliveries verify with its secret (on a shared database, an old test's endpoint
      // may still retry towards a port this receiver now has).
      const ours = (got: typeof r.received) => got.filter((d) => d.verified);
      await r.until((got) => new Set(ours(got).filter((d) => d.answered === 200).map((d) => d.id)).size >= MESSAGES, 60_000);
      const succeeded = ours(r.received).filter((d) => d.answered === 200);
      const perId = new Map<string, number>();
      for (const d of succeeded) perId.set(d.id, (perId.get(d.id) ?? 0) + 1);
      expect(perId.size).to.equal(MESSAGES);
      expect(r.maxConcurrentPerId, 'one delivery attempted twice at once').to.equal(1);
      const twice = [...perId.values()].filter((c) => c > 1).length;
      const recorded = await eventually(async () => {
        const rows = await h.database.asSystem((trx) =>
          trx.selectFrom('webhook_deliveries').select(['status', 'attempts']).where('webhook_id', '=', hook.id).execute(),
        );
        return rows.every((row) => row.status === 'succeeded') && rows;
      }, 'every delivery recorded as succeeded');
      recordFigure('webhooks, 2 instances', 'events delivered', perId.size);
      recordFigure('webhooks, 2 instances', 'attempts (a / b)', `${attemptsBy.a ?? 0} / ${attemptsBy.b ?? 0}`);
      recordFigure('webhooks, 2 instances', 'receiver requests', ours(r.received).length);
      recordFigure('webhooks, 2 instances', 'one delivery attempted twice at once', r.maxConcurrentPerId > 1 ? 'yes' : 0);
      recordFigure('webhooks, 2 instances', 'succeeded twice', twice);
      expect(recorded).to.have.length(MESSAGES);
      expect(recorded.reduce((s, row) => s + row.attempts, 0), 'attempts recorded = requests received').to.equal(ours(r.received).length);
      expect(twice, 'a delivery succeeded twice').to.equal(0);
      expect(attemptsBy.a, 'instance a worked').to.be.greaterThan(0);
      expect(attemptsBy.b, 'instance b worked').to.be.greaterThan(0);
    } finally {
      for (const d of dispatchers) await d.stop();
    }
  });

  describe('kill -9 mid-delivery', () => {
    let dataDir: string;
    let child: ChildProcess | undefined;
    beforeEach(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'chat-webhooks-'));
    });
    afterEach(async () => {
      child?.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    });

    function start(): Promise<string> {
      let output = '';
      child = spawn(process.execPath, ['src/server.ts'], {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          PORT: '0',
          HOST: '127.0.0.1',
          LOG_LEVEL: 'info',
          DATA_DIR: dataDir,
          BCRYPT_COST: '4',
          // PostgreSQL when the suite runs on it, else an embedded database on disk that outlives the process.
          DATABASE_URL: process.env.DATABASE_URL ?? `pglite://${join(dataDir, 'db')}`,
          WEBHOOK_ALLOW_PRIVATE: 'true',
          WEBHOOK_TIMEOUT_MS: '1000',
          WEBHOOK_POLL_MS: '100',
          WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,400ms',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      return new Promise((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(output);
          if (match) resolve(match[1]!);
        };
        child!.stdout!.on('data', onData);
        child!.stderr!.on('data', onData);
        child!.once('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
      });
    }

    it('loses nothing: the delivery in flight and those queued behind it arrive after a restart, under their ids', async function () {
      this.timeout(120_000);
      // The first request hangs: the instance is killed while it waits for the answer.
      let killed = false;
      const r = await startReceiver({ behave: () => (killed ? 'ok' : 'hang') });
      receivers.push(r);
      const url = await start();
      const email = `owner-${Date.now()}@example.test`;
      const reg = await fetch(`${url}/api/v1/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'correct horse battery staple', name: 'O', tenant_name: 'Kill' }),
      }).then((res) => res.json() as Promise<Record<string, any>>);
      const auth = { ...bearer(reg.access_token), 'content-type': 'application/json' };
      const hook = await fetch(`${url}/api/v1/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: r.url, events: ['*'] }) }).then(
        (res) => res.json() as Promise<Record<string, any>>,
      );
      r.secrets.push(hook.secret);
      const EVENTS = 10;
      for (let i = 0; i < EVENTS; i++) {
        const res = await fetch(`${url}/api/v1/webhooks/${hook.id}/test`, { method: 'POST', headers: auth });
        expect(res.status).to.equal(202);
      }
      // Sentinel: a request reached the receiver and hangs there. Then the process dies without a word.
      await eventually(async () => r.maxConcurrentPerId > 0, 'a delivery in flight', 30_000);
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child!.kill('SIGKILL');
      await exited;
      killed = true;
      const beforeRestart = r.received.filter((d) => d.answered === 200).length;
      await start();
      const ours = () => r.received.filter((d) => d.verified);
      await r.until(() => new Set(ours().filter((d) => d.answered === 200).map((d) => d.id)).size >= EVENTS, 60_000);
      const ok = ours().filter((d) => d.answered === 200);
      const ids = new Set(ok.map((d) => d.id));
      const cut = ours().filter((d) => d.answered === 0).map((d) => d.id);
      recordFigure('webhooks, kill -9', 'events', EVENTS);
      recordFigure('webhooks, kill -9', 'delivered before the kill', beforeRestart);
      recordFigure('webhooks, kill -9', 'attempts cut by the kill', cut.length);
      recordFigure('webhooks, kill -9', 'delivered after the restart (distinct ids)', ids.size);
      recordFigure('webhooks, kill -9', 'lost', EVENTS - ids.size);
      expect(ids.size).to.equal(EVENTS);
      expect(ok.length, 'each delivered once').to.equal(EVENTS);
      expect(cut.length).to.be.greaterThan(0);
      // The attempt the kill cut short was made again under the same webhook-id.
      for (const id of cut) expect(ids.has(id), id).to.equal(true);
    });
  });
});

