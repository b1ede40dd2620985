// `npm run test:chaos`: the whole topology of `npm run stack` (HAProxy, three instances, PgBouncer, a
// primary with a streaming standby, Redis) under a load of sends through the balancer and 30 agent sockets
// spread over the instances, broken five ways one after the other: an instance killed with kill -9 and
// started again, an instance drained with SIGTERM and started again, Redis stopped for five seconds,
// PgBouncer restarted, the primary stopped and the standby promoted. Every disturbance waits on sentinels
// (an instance ready, a send answered), never on a sleep, but for the deliberate Redis outage. At the end,
// against the database: every send answered 2xx stored once, every socket saw every message.created of
// its tenant once (across its reconnections, by event id), no instance crashed. Figures go to the fault
// figures' table (test/faults/figures.ts): 5xx answers, requests without an answer, each disturbance's
// unavailability window, reconnect p99.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sql } from 'kysely';
import { WebSocket } from 'ws';
import { openDatabase } from '../../src/db/database.ts';
import { alive, readState, restartInstance, restartPooler, runningPids, startRedis, stopRedis, type StackState } from '../../scripts/stack/stack.ts';
import { recordFigure } from '../faults/figures.ts';
import { auditMessages, call, type LoadTenant, ROOT, type SentMessage, sendMessage, setUpTenant, waitFor } from '../faults/support.ts';

const SUITE = 'chaos';
const TENANTS = 3;
const SOCKETS_PER_TENANT = 10;
/** One writer per conversation, each sending one message every PACE_MS when answered in time. */
const CONVERSATIONS_PER_TENANT = 2;
const PACE_MS = 100;

const stack = (command: string, dir: string) =>
  spawnSync(process.execPath, ['scripts/stack/stack.ts', command, '--dir', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    // Fast password hashing for the logins, and a rate limit the load never reaches (every request comes
    // from the balancer's address); the rest is the stack's own configuration.
    env: { ...process.env, BCRYPT_COST: '4', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000' },
  });

const installed = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ok = (status: SentMessage['status']) => typeof status === 'number' && status >= 200 && status < 300;

/** One send attempt: when it left, when its answer (or its failure) came. */
type Attempt = SentMessage & { at: number; end: number };

/** Which disturbance ran from `from` to `to` (the quiet start and end are phases too). */
interface Phase {
  name: string;
  from: number;
  to: number;
}

/**
 * An agent's socket that reconnects through the balancer with last_event_id whenever it is closed, as
 * the contract asks of a client. What it saw is kept by event id across its connections.
 */
class AgentSocket {
  /** event id -> how many times it arrived, over all connections. */
  readonly seen = new Map<string, number>();
  /** Arrivals of an event id twice on one connection (a replay overlapping the live stream). */
  doubledOnOneConnection = 0;
  resyncs = 0;
  connections = 0;
  readonly reconnectMs: { at: number; ms: number }[] = [];
  closes: { at: number; code: number }[] = [];
  lastEventId: string | undefined;
  open = false;
  #ws: WebSocket | undefined;
  #stopped = false;

  readonly url: string;
  readonly token: string;

  constructor(url: string, token: string) {
    this.url = url;
    this.token = token;
  }

  /** Resolves once welcomed (the socket has joined its tenant's stream). */
  async start(): Promise<void> {
    await this.#connect();
  }

  #connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const url = this.lastEventId ? `${this.url}?last_event_id=${encodeURIComponent(this.lastEventId)}` : this.url;
      const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${this.token}` } });
      const onThisConnection = new Set<string>();
      let welcomed = false;
      ws.on('message', (raw) => {
        const frame = JSON.parse(raw.toString()) as { type: string; id?: string };
        if (frame.type === 'welcome') {
          welcomed = true;
          this.open = true;
          this.connections++;
          resolve();
          return;
        }
        if (frame.type === 'resync_required') this.resyncs++;
        if (!frame.id) return;
        if (onThisConnection.has(frame.id)) this.doubledOnOneConnection++;
        onThisConnection.add(frame.id);
        this.lastEventId = frame.id;
        if (frame.type === 'message.created') this.seen.set(frame.id, (this.seen.get(frame.id) ?? 0) + 1);
      });
      ws.on('error', () => undefined);
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        ws.terminate();
      });
      ws.once('close', (code) => {
        this.open = false;
        if (!welcomed) return reject(new Error(`closed before its welcome (${code})`));
        this.closes.push({ at: Date.now(), code });
        if (!this.#stopped) void this.#reconnect(Date.now());
      });
      this.#ws = ws;
    });
  }

  /** Tries again every 100 ms (the balancer needs a moment to see an instance gone) until welcomed. */
  async #reconnect(closedAt: number): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#connect();
        this.reconnectMs.push({ at: closedAt, ms: Date.now() - closedAt });
        return;
      } catch {
        await pause(100);
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#ws?.close();
  }
}

/** The attempts of a phase: those answered (or failed) during it. */
const during = (attempts: Attempt[], phase: Phase) => attempts.filter((a) => a.end >= phase.from && a.end < phase.to);

/**
 * Every window of a phase: from a request that failed (5xx, refused, no answer) to the answer of the next
 * request sent after it that was answered 2xx.
 */
function windows(attempts: Attempt[], phase: Phase): number[] {
  const within = during(attempts, phase).sort((a, b) => a.at - b.at);
  const found: number[] = [];
  let since: number | undefined;
  for (const a of within) {
    if (!ok(a.status)) since ??= a.at;
    else if (since !== undefined) {
      found.push(a.end - since);
      since = undefined;
    }
  }
  if (since !== undefined) found.push(phase.to - since);
  return found;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

describe('chaos (npm run test:chaos): the stack under load, broken five ways one after the other', function () {
  this.timeout(1_200_000);
  let dir: string;
  let state: StackState;
  /** Set while the load runs; the writers stop and the sockets close when the test ends, failed or not. */
  const load = { sending: false, sockets: [] as AgentSocket[] };

  before(async function () {
    const missing = ['haproxy', 'pgbouncer', 'redis-server'].filter((cmd) => !installed(cmd));
    if (missing.length > 0 && process.getuid?.() !== 0) {
      console.log(`    (skipped: ${missing.join(', ')} not installed; as root the stack installs them)`);
      return this.skip();
    }
    dir = await mkdtemp(join(tmpdir(), 'chat-chaos-'));
    // Its three instances migrate the fresh database at once, through PgBouncer (src/db/migrate.ts).
    const started = stack('start', dir);
    expect(started.status, started.stdout + started.stderr).to.equal(0);
    state = readState(dir)!;
    expect(runningPids(state), 'every piece runs').to.have.length(8);
  });

  afterEach(function () {
    load.sending = false;
    for (const s of load.sockets) s.stop();
    // The logs outlive a failed run (the stop removes the stack's folder).
    if (this.currentTest?.state === 'failed' && dir) {
      const kept = `${dir}-logs`;
      cpSync(dir, kept, { recursive: true, filter: (src) => !/\/(postgres|app-data)\//.test(src) && !src.endsWith('.env.json') });
      console.log(`    logs kept in ${kept}`);
    }
  });

  after(async function () {
    if (!dir) return;
    const stopped = stack('stop', dir);
    if (stopped.status !== 0) console.log(`    npm run stack -- stop failed; logs kept in ${dir}:\n${stopped.stdout}${stopped.stderr}`);
    else await rm(dir, { recursive: true, force: true });
  });

  it('kill -9, SIGTERM, Redis away 5 s, PgBouncer restarted, failover: nothing lost, doubled or missed, no instance crashed', async () => {
    const began = Date.now();
    const log = (what: string) => console.log(`      ${((Date.now() - began) / 1000).toFixed(1).padStart(6)} s  ${what}`);
    const ws = `${state.url.replace(/^http/, 'ws')}/api/v1/ws`;
    const tenants: LoadTenant[] = [];
    for (let i = 0; i < TENANTS; i++) tenants.push(await setUpTenant(state.url, CONVERSATIONS_PER_TENANT));

    // Opened one after the other with nothing between: round robin spreads them evenly over the three.
    const sockets = new Map<LoadTenant, AgentSocket[]>();
    for (const tenant of tenants) sockets.set(tenant, []);
    for (let i = 0; i < SOCKETS_PER_TENANT; i++) {
      for (const tenant of tenants) {
        const socket = new AgentSocket(ws, tenant.token);
        load.sockets.push(socket);
        await socket.start();
        sockets.get(tenant)!.push(socket);
      }
    }
    const all = [...sockets.values()].flat();
    log(`${all.length} sockets open`);

    const attempts: Attempt[] = [];
    const answered: SentMessage[] = [];
    load.sending = true;
    const lastAnswered = () => answered.length;
    /** A client's sends: each with its own Idempotency-Key, retried (backing off to 1 s) until 2xx. */
    const writer = async (tenant: LoadTenant, conversationId: string) => {
      while (load.sending) {
        const key = randomUUID();
        const started = Date.now();
        for (let backoff = 100; ; backoff = Math.min(backoff * 2, 1_000)) {
          const at = Date.now();
          const sent = await sendMessage(state.url, tenant, conversationId, key);
          attempts.push({ ...sent, at, end: Date.now() });
          if (ok(sent.status)) {
            answered.push(sent);
            break;
          }
          if (Date.now() - started > 120_000) throw new Error(`key ${key} not stored within 120 s: last ${sent.status} ${sent.code ?? ''}`);
          await pause(backoff);
        }
        await pause(Math.max(0, PACE_MS - (Date.now() - started)));
      }
    };
    const writers = Promise.all(tenants.flatMap((t) => t.conversationIds.map((c) => writer(t, c))));
    let writerFailure: unknown;
    writers.catch((err: unknown) => (writerFailure = err));

    /** Sentinel: `n` more sends answered 2xx from now. */
    const sends = async (what: string, n = 20, timeoutMs = 60_000) => {
      const target = lastAnswered() + n;
      await waitFor(`${what}: ${n} sends answered 2xx`, () => {
        if (writerFailure) throw writerFailure;
        return lastAnswered() >= target;
      }, timeoutMs);
    };
    const readyAt = async (port: number) => (await call(`http://127.0.0.1:${port}`, 'GET', '/api/ready').catch(() => undefined))?.body;
    const everyInstanceReady = (what: string, redis = false) =>
      waitFor(`${what}: every instance ready${redis ? ' with Redis' : ''}`, async () => {
        const current = readState(dir)!;
        for (const instance of current.instances) {
          const body = await readyAt(instance.port);
          if (body?.status !== 'ok' || (redis && body.checks?.redis !== 'ok')) return false;
        }
        return true;
      }, 60_000);
    const socketsOpen = (what: string) => waitFor(`${what}: all ${all.length} sockets open again`, () => all.every((s) => s.open), 60_000);
    const expectedPids = new Map<number, number>(state.instances.map((s, i) => [i, s.pid!]));

    const phases: Phase[] = [];
    let phaseFrom = Date.now();
    const endPhase = (name: string) => {
      phases.push({ name, from: phaseFrom, to: Date.now() });
      phaseFrom = Date.now();
      log(`${name}: done`);
    };

    await sends('the load under way', 100);
    endPhase('steady');

    // (1) kill -9: the balancer routes around the dead instance, its sockets resume on the others.
    {
      const victim = readState(dir)!.instances[0]!;
      process.kill(victim.pid!, 'SIGKILL');
      await waitFor('the killed instance to be gone', () => !alive(victim.pid));
      await socketsOpen('after kill -9');
      await sends('after kill -9');
      const restarted = await restartInstance(dir, 0);
      expectedPids.set(0, restarted.instances[0]!.pid!);
      await everyInstanceReady('kill -9 restarted');
      await sends('kill -9 restarted');
      endPhase('kill -9');
    }

    // (2) SIGTERM: not ready at once, its sockets told 1001 and resumed elsewhere, drained, exits 0.
    {
      const drained = readState(dir)!.instances[1]!;
      const logBefore = readFileSync(drained.log, 'utf8').length;
      process.kill(drained.pid!, 'SIGTERM');
      await waitFor('the drained instance to exit', () => !alive(drained.pid), 60_000);
      const tail = readFileSync(drained.log, 'utf8').slice(logBefore);
      expect(/"msg":"stopped"/.test(tail), `the drained instance logs its stop (it exits 0 after it); its log's end:\n${tail.slice(-3000)}`).to.equal(true);
      await socketsOpen('after SIGTERM');
      await sends('after SIGTERM');
      const restarted = await restartInstance(dir, 1);
      expectedPids.set(1, restarted.instances[1]!.pid!);
      await everyInstanceReady('SIGTERM restarted');
      await sends('SIGTERM restarted');
      endPhase('SIGTERM');
    }

    // (3) Redis away for five seconds: the deliberate outage is the one sleep.
    {
      await stopRedis(dir);
      log('Redis stopped');
      await pause(5_000);
      await startRedis(dir);
      await everyInstanceReady('Redis back', true);
      await sends('Redis back');
      await socketsOpen('Redis back');
      endPhase('Redis 5 s');
    }

    // (4) PgBouncer restarted: its connections cut, the instances' pools reconnect.
    {
      await restartPooler(dir);
      await everyInstanceReady('PgBouncer restarted');
      await sends('PgBouncer restarted');
      await socketsOpen('PgBouncer restarted');
      endPhase('PgBouncer restart');
    }

    // (5) The primary stopped and the standby promoted, PgBouncer pointed at it.
    {
      const promoted = stack('failover', dir);
      expect(promoted.status, promoted.stdout + promoted.stderr).to.equal(0);
      expect(readState(dir)!.pooler.target).to.equal('standby');
      await everyInstanceReady('failover');
      await sends('failover');
      await socketsOpen('failover');
      endPhase('failover');
    }

    await sends('the load after all five', 100);
    load.sending = false;
    await writers;
    endPhase('end');

    // The audit, on the promoted standby: every send answered 2xx stored once with one event; every
    // socket has every message.created of its tenant, once by event id.
    const final = readState(dir)!;
    const database = await openDatabase({ databaseUrl: final.directUrl, dataDir: '.', poolMax: 2 });
    let lost = 0;
    let doubled = 0;
    let eventsWrong = 0;
    let stored = 0;
    const gaps: string[] = [];
    try {
      for (const tenant of tenants) {
        const audit = await auditMessages(database, tenant.tenantId, attempts.filter((a) => tenant.conversationIds.includes(a.conversationId)));
        lost += audit.lost;
        doubled += audit.doubled;
        eventsWrong += audit.eventsWrong;
        stored += audit.stored;
        const rows = await database.asSystem((trx) =>
          sql<{ id: string }>`select id from events where tenant_id = ${tenant.tenantId} and type = 'message.created'`.execute(trx),
        );
        const expected = rows.rows.map((r) => r.id);
        const mine = sockets.get(tenant)!;
        // Sentinel: each socket holds every event the database has (what is on its way arrives).
        await waitFor('every socket to have every message.created', () => mine.every((s) => expected.every((id) => s.seen.has(id))), 30_000).catch(() => undefined);
        for (const [i, s] of mine.entries()) {
          const missing = expected.filter((id) => !s.seen.has(id));
          if (missing.length > 0) gaps.push(`tenant ${tenant.tenantId} socket ${i}: ${missing.length} of ${expected.length} missing (first ${missing[0]})`);
        }
      }
    } finally {
      await database.close();
    }
    for (const s of all) s.stop();

    // No instance crashed: each runs under the pid it was (re)started with, and no log holds a fatal line.
    const crashed: string[] = [];
    for (const [i, instance] of final.instances.entries()) {
      if (instance.pid !== expectedPids.get(i) || !alive(instance.pid)) crashed.push(`instance ${i + 1}: pid ${instance.pid} not running`);
      const fatal = readFileSync(instance.log, 'utf8').split('\n').filter((l) => /"level":60|Uncaught|triggerUncaughtException/.test(l));
      if (fatal.length > 0) crashed.push(`instance ${i + 1}: ${fatal[0]!.slice(0, 300)}`);
    }
    for (const piece of ['balancer', 'pooler', 'redis', 'standby'] as const) if (!alive(final[piece].pid)) crashed.push(`${piece} not running`);

    const fiveXX = attempts.filter((a) => typeof a.status === 'number' && a.status >= 500);
    const unanswered = attempts.filter((a) => a.status === 'no answer');
    const other = attempts.filter((a) => typeof a.status === 'number' && a.status >= 300 && a.status < 500);
    const reconnects = all.flatMap((s) => s.reconnectMs.map((r) => r.ms));
    const failedShare = (fiveXX.length + unanswered.length) / attempts.length;
    recordFigure(SUITE, 'requests (send attempts)', attempts.length);
    recordFigure(SUITE, 'sends answered 2xx', answered.length);
    recordFigure(SUITE, '5xx answers', `${fiveXX.length} (${[...new Set(fiveXX.map((a) => `${a.status} ${a.code ?? ''}`.trim()))].join(', ') || 'none'})`);
    recordFigure(SUITE, 'requests failed without an answer', unanswered.length);
    recordFigure(SUITE, 'other answers not 2xx', `${other.length} ${[...new Set(other.map((a) => `${a.status} ${a.code ?? ''}`.trim()))].join(', ')}`);
    recordFigure(SUITE, '5xx or unanswered (%)', (failedShare * 100).toFixed(3));
    for (const phase of phases) {
      const found = windows(attempts, phase);
      const inPhase = during(attempts, phase);
      const latency = inPhase.map((a) => a.end - a.at);
      const failed = inPhase.filter((a) => !ok(a.status)).map((a) => String(a.status));
      recordFigure(SUITE, `${phase.name}: unavailable (longest window, ms)`, found.length ? Math.max(...found) : 0);
      recordFigure(SUITE, `${phase.name}: failed attempts (which) / attempts; send p99 / max (ms)`, `${failed.length} (${failed.join(', ')}) / ${inPhase.length}; ${percentile(latency, 99)} / ${Math.max(0, ...latency)}`);
      recordFigure(SUITE, `${phase.name}: socket reconnections`, all.reduce((n, s) => n + s.reconnectMs.filter((r) => r.at >= phase.from && r.at < phase.to).length, 0));
    }
    recordFigure(SUITE, 'reconnections; p50 / p99 / max (ms)', `${reconnects.length}; ${percentile(reconnects, 50)} / ${percentile(reconnects, 99)} / ${Math.max(0, ...reconnects)}`);
    recordFigure(SUITE, 'events twice on one connection', all.reduce((n, s) => n + s.doubledOnOneConnection, 0));
    recordFigure(SUITE, 'events twice across reconnections (counted once)', all.reduce((n, s) => n + [...s.seen.values()].filter((c) => c > 1).length, 0));
    recordFigure(SUITE, 'resync_required frames', all.reduce((n, s) => n + s.resyncs, 0));
    recordFigure(SUITE, 'lost / doubled / events wrong / stored', `${lost} / ${doubled} / ${eventsWrong} / ${stored}`);
    recordFigure(SUITE, 'socket gaps', gaps.length);
    recordFigure(SUITE, 'crashed', crashed.length);
    recordFigure(SUITE, 'run (s)', ((Date.now() - began) / 1000).toFixed(0));

    expect({ lost, doubled, eventsWrong }, 'the database against the answers').to.deep.equal({ lost: 0, doubled: 0, eventsWrong: 0 });
    expect(gaps, 'sockets that missed a message.created').to.deep.equal([]);
    expect(all.reduce((n, s) => n + s.doubledOnOneConnection, 0), 'an event twice on one connection').to.equal(0);
    expect(crashed, 'crashed pieces').to.deep.equal([]);
    expect(failedShare, 'share of requests answered 5xx or unanswered').to.be.below(0.001);
    for (const phase of phases) {
      const longest = Math.max(0, ...windows(attempts, phase));
      expect(longest, `${phase.name}: the longest unavailability window (ms)`).to.be.at.most(phase.name === 'failover' ? 15_000 : 5_000);
    }
  });
});
