// The whole topology of `npm run stack` (HAProxy, three instances, PgBouncer, a primary with a streaming
// standby, Redis), started by its own command in a folder of this test's, then broken on purpose: an
// instance killed with kill -9 under sockets and sends, and the standby promoted under sends. Every
// request goes through the balancer; what the sockets saw and what the database holds are audited.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { openDatabase } from '../../src/db/database.ts';
import { connect, type Client } from '../support/realtime.ts';
import { recordFigure } from './figures.ts';
import { auditMessages, type LoadTenant, ROOT, type SentMessage, sendMessage, setUpTenant, waitFor } from './support.ts';
import { alive, readState, runningPids, type StackState } from '../../scripts/stack/stack.ts';

const SUITE = 'stack';

const stack = (command: string, dir: string) =>
  spawnSync(process.execPath, ['scripts/stack/stack.ts', command, '--dir', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    // Fast password hashing for the test's logins; the rest is the stack's own configuration.
    // Logs at info: an instance that does not become ready shows how far its start went.
    env: { ...process.env, BCRYPT_COST: '4', LOG_LEVEL: 'info' },
  });

const installed = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const createdIds = (client: Client) => client.frames.filter((f) => f.type === 'message.created').map((f) => f.data.message.id as string);
const lastEventId = (client: Client) => client.frames.filter((f) => f.id).at(-1)?.id as string;

/** Sends with one Idempotency-Key until answered 2xx, as a client does; every attempt is recorded. */
type Attempt = SentMessage & { at: number };

/** The longest time from a failed attempt to the next 2xx: how long the service was unavailable. */
function unavailableMs(attempts: Attempt[]): number {
  let worst = 0;
  let since: number | undefined;
  for (const a of attempts) {
    const ok = typeof a.status === 'number' && a.status < 300;
    if (!ok) since ??= a.at;
    else if (since !== undefined) {
      worst = Math.max(worst, a.at - since);
      since = undefined;
    }
  }
  return worst;
}

async function sendUntilStored(base: string, tenant: LoadTenant, conversationId: string, attempts: Attempt[], deadlineMs: number): Promise<SentMessage> {
  const key = randomUUID();
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const at = Date.now();
    const sent = await sendMessage(base, tenant, conversationId, key);
    attempts.push({ ...sent, at });
    if (typeof sent.status === 'number' && sent.status < 300) return sent;
    if (Date.now() > deadline) throw new Error(`key ${key} not stored within ${deadlineMs} ms: last ${sent.status} ${sent.code ?? ''}`);
    // A client's back-off: the next attempt after a short pause (the balancer or pooler is switching).
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the stack (npm run stack): balancer, three instances, PgBouncer, primary and standby, Redis', function () {
  this.timeout(180_000);
  let dir: string;
  let state: StackState;
  let pids: number[] = [];

  before(async function () {
    const missing = ['haproxy', 'pgbouncer', 'redis-server'].filter((cmd) => !installed(cmd));
    if (missing.length > 0 && process.getuid?.() !== 0) {
      console.log(`    (skipped: ${missing.join(', ')} not installed; .ci/run installs them)`);
      return this.skip();
    }
    dir = await mkdtemp(join(tmpdir(), 'chat-stack-'));
    const started = stack('start', dir);
    expect(started.status, started.stdout + started.stderr).to.equal(0);
    state = readState(dir)!;
    pids = runningPids(state);
    expect(pids, 'every piece runs').to.have.length(8);
  });

  after(async function () {
    if (!dir) return;
    const stopped = stack('stop', dir);
    expect(stopped.status, stopped.stdout + stopped.stderr).to.equal(0);
    expect(pids.filter(alive), 'pids of the stack still running after stop').to.deep.equal([]);
    expect(existsSync(dir), 'the stack folder is removed').to.equal(false);
    await rm(dir, { recursive: true, force: true });
  });

  it('kill -9 of an instance: the balancer routes around it, its socket resumes on another with last_event_id, nothing lost or doubled', async () => {
    const tenant = await setUpTenant(state.url, 1);
    const conversationId = tenant.conversationIds[0]!;
    const ws = `${state.url.replace(/^http/, 'ws')}/api/v1/ws`;
    const auth = { Authorization: `Bearer ${tenant.token}` };
    // Opened one after the other with nothing between: round robin puts one on each instance.
    const sockets: Client[] = [];
    for (let i = 0; i < 3; i++) sockets.push(await connect(ws, auth));
    const attempts: Attempt[] = [];
    const stored: SentMessage[] = [];
    for (let i = 0; i < 5; i++) stored.push(await sendUntilStored(state.url, tenant, conversationId, attempts, 10_000));
    await waitFor('every socket to see the first sends', () => sockets.every((s) => createdIds(s).length === 5)).catch((err: Error) => {
      const sent = stored.map((m) => m.messageId);
      // Which sends each socket missed (by their order) and the frames it got: a missed wake-up shows as the last.
      throw new Error(`${err.message}: ${JSON.stringify(sockets.map((s) => ({ missing: sent.filter((id) => !createdIds(s).includes(id!)).map((id) => sent.indexOf(id)), frames: s.frames.map((f) => f.type) })))}`);
    });

    let sending = true;
    const writer = (async () => {
      while (sending) stored.push(await sendUntilStored(state.url, tenant, conversationId, attempts, 15_000));
    })();
    const victim = state.instances[0]!;
    await waitFor('sends under way', () => stored.length >= 10);
    process.kill(victim.pid!, 'SIGKILL');
    await waitFor('the victim to be gone', () => !alive(victim.pid));
    const closed = await Promise.race([Promise.any(sockets.map((s) => s.closed.then(() => s))), new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
    expect(closed, 'a socket on the killed instance closes').to.not.equal(undefined);
    const before = stored.length;
    await waitFor('sends after the kill', () => stored.length >= before + 10);
    sending = false;
    await writer;

    // The closed one(s) resume through the balancer, which no longer sends anyone to the dead instance.
    const resumed = new Map<Client, Client>();
    for (const s of sockets.filter((x) => x.ws.readyState !== x.ws.OPEN)) resumed.set(s, await connect(`${ws}?last_event_id=${lastEventId(s)}`, auth));
    const expected = stored.map((s) => s.messageId!).sort();
    const seen = (s: Client) => [...createdIds(s), ...(resumed.has(s) ? createdIds(resumed.get(s)!) : [])];
    await waitFor('every socket to have seen every stored message', () => sockets.every((s) => new Set(seen(s)).size >= expected.length), 15_000).catch(() => undefined);
    for (const s of sockets) expect([...seen(s)].sort(), 'each stored message once on every socket').to.deep.equal(expected);
    for (const c of [...sockets, ...resumed.values()]) c.close();

    const database = await openDatabase({ databaseUrl: state.directUrl, dataDir: '.', poolMax: 2 });
    try {
      const audit = await auditMessages(database, tenant.tenantId, attempts);
      recordFigure(SUITE, 'kill -9: sends stored', stored.length);
      recordFigure(SUITE, 'kill -9: attempts not answered 2xx', attempts.length - stored.length);
      recordFigure(SUITE, 'kill -9: sockets resumed', resumed.size);
      recordFigure(SUITE, 'kill -9: unavailable (ms)', unavailableMs(attempts));
      expect(audit).to.include({ lost: 0, doubled: 0, eventsWrong: 0, stored: stored.length });
      // One writer: only the send in flight on the killed instance may fail; the balancer retries the
      // connections the dead instance refuses on another one, before its check marks it down.
      expect(attempts.length - stored.length, 'attempts that failed').to.be.at.most(1);
    } finally {
      await database.close();
    }
  });

  it('the standby promoted and PgBouncer pointed at it: writes continue, only in-flight ones fail and their retries store them once', async () => {
    const tenant = await setUpTenant(state.url, 1);
    const conversationId = tenant.conversationIds[0]!;
    const attempts: Attempt[] = [];
    const stored: SentMessage[] = [];
    let sending = true;
    const writer = (async () => {
      while (sending) stored.push(await sendUntilStored(state.url, tenant, conversationId, attempts, 30_000));
    })();
    await waitFor('sends under way', () => stored.length >= 10);
    const promoted = stack('failover', dir);
    expect(promoted.status, promoted.stdout + promoted.stderr).to.equal(0);
    const after = readState(dir)!;
    expect(after.pooler.target).to.equal('standby');
    const before = stored.length;
    await waitFor('sends stored after the failover', () => stored.length >= before + 10, 60_000);
    sending = false;
    await writer;

    const failed = attempts.filter((a) => a.status === 'no answer' || (a.status as number) >= 300);
    recordFigure(SUITE, 'failover: sends stored', stored.length);
    recordFigure(SUITE, 'failover: attempts not answered 2xx', failed.length);
    recordFigure(SUITE, 'failover: unavailable (ms)', unavailableMs(attempts));
    recordFigure(SUITE, 'failover: their answers', [...new Set(failed.map((f) => `${f.status} ${f.code ?? ''}`.trim()))].join(', ') || 'none');
    expect(failed.filter((f) => f.status !== 'no answer' && (f.status as number) < 500).map((f) => `${f.status} ${f.code}`), 'client errors').to.deep.equal([]);
    expect(unavailableMs(attempts), 'the failover window (ms)').to.be.below(15_000);

    // Audited on the promoted standby: every answered send is there once, with its one event.
    const database = await openDatabase({ databaseUrl: after.directUrl, dataDir: '.', poolMax: 2 });
    try {
      const audit = await auditMessages(database, tenant.tenantId, attempts);
      expect(audit).to.include({ lost: 0, doubled: 0, eventsWrong: 0, stored: stored.length });
    } finally {
      await database.close();
    }
  });
});
