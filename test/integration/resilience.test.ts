import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sql } from 'kysely';
import request from 'supertest';
import { DataDirLockedError } from '../../src/db/data-dir-lock.ts';
import { type Database, type Tx, openDatabase } from '../../src/db/database.ts';
import { EventBus } from '../../src/events/bus.ts';
import { inTenantTransaction } from '../../src/events/outbox.ts';
import { newId } from '../../src/shared/ids.ts';
import { asUnavailable, isConnectionError } from '../../src/db/errors.ts';
import { loadContract } from '../../src/http/contract.ts';
import { eventually } from '../support/eventually.ts';
import { createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/** A port nothing listens on (connections are refused). */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await closeServer(server);
  return port;
}

describe('the service without its database', () => {
  const opened: Database[] = [];
  const servers: Server[] = [];
  after(async () => {
    for (const d of opened.splice(0)) await d.close();
    for (const s of servers.splice(0)) await closeServer(s);
  });

  async function unreachable(how: 'refused' | 'hung up'): Promise<Database> {
    let port: number;
    if (how === 'refused') {
      port = await closedPort();
    } else {
      // Accepts, then ends the connection before PostgreSQL's greeting: "Connection terminated".
      const server = createServer((socket) => socket.destroy());
      servers.push(server);
      port = await listen(server);
    }
    const database = await openDatabase({ databaseUrl: `postgres://chat_owner@127.0.0.1:${port}/nowhere`, dataDir: '.', poolMax: 2 });
    opened.push(database);
    return database;
  }

  for (const how of ['refused', 'hung up'] as const) {
    it(`answers 503 ERR_UNAVAILABLE with Retry-After, never 500, when connections are ${how}`, async () => {
      const t = await createTenant();
      const h = await getHarness();
      const app = h.appWith({}, { database: await unreachable(how) });
      const bearer = { Authorization: `Bearer ${t.owner.accessToken}` };
      for (const res of [
        await request(app).get('/api/v1/conversations').set(bearer),
        await request(app).post('/api/v1/messages').set(bearer).set('Idempotency-Key', 'k1').send({ conversation_id: '0198a7a4-98a3-7d52-9d3e-6a1f0f3c1b2a', content: 'hi' }),
        await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: 'whatever-password' }),
        await request(app).get('/api/ready'),
      ]) {
        const body = expectProblem(res, 503, 'ERR_UNAVAILABLE');
        expect(res.headers['retry-after']).to.match(/^\d+$/);
        expect(body.detail).not.to.match(/ECONN|terminated/);
      }
      await request(app).get('/api/health').expect(200);
    });
  }

  it('every operation that can reach the database documents its 503', () => {
    const { document, operations } = loadContract();
    for (const op of operations) {
      if (op.operationId === 'getHealth') continue;
      const responses = document.paths[op.path][op.method].responses;
      expect(responses?.['503'], op.operationId).to.deep.equal({ $ref: '#/components/responses/ServiceUnavailable' });
    }
  });

  it('knows a lost connection from a refused statement', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(isConnectionError(refused)).to.equal(true);
    expect(isConnectionError(new AggregateError([refused], 'connect failed'))).to.equal(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).to.equal(true);
    expect(isConnectionError(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).to.equal(true);
    expect(isConnectionError(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).to.equal(true);
    expect(isConnectionError(Object.assign(new Error('connection failure'), { code: '08006' }))).to.equal(true);
    expect(isConnectionError(new Error('outer', { cause: refused }))).to.equal(true);
    expect(isConnectionError(Object.assign(new Error('duplicate key'), { code: '23505' }))).to.equal(false);
    expect(isConnectionError(Object.assign(new Error('syntax error'), { code: '42601' }))).to.equal(false);
    expect(isConnectionError(new Error('Connection refused by policy'))).to.equal(false);
    expect(asUnavailable(refused)?.headers).to.deep.equal({ 'Retry-After': '5' });
  });
});

describe('the PostgreSQL pool when the server ends its connections', function () {
  const url = process.env.DATABASE_URL;
  let database: Database;
  let admin: Database;
  const heard: Error[] = [];
  const appName = `resilience-${process.pid}`;

  before(async function () {
    if (!url) return this.skip();
    const withName = new URL(url);
    withName.searchParams.set('application_name', appName);
    database = await openDatabase({ databaseUrl: withName.toString(), dataDir: '.', poolMax: 3, onConnectionError: (err) => heard.push(err) });
    admin = await openDatabase({ databaseUrl: url, dataDir: '.', poolMax: 1 });
  });
  after(async () => {
    await database?.close();
    await admin?.close();
  });

  const terminateOurs = () =>
    sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${appName} and pid <> pg_backend_pid()`.execute(admin.db);

  it('an idle connection terminated by the server is heard, not fatal, and the pool reconnects', async () => {
    await Promise.all([database.ping(), database.ping(), database.ping()]);
    heard.length = 0;
    const terminated = await terminateOurs();
    expect(terminated.rows.length).to.be.greaterThan(0);
    await eventually(() => heard.length >= terminated.rows.length, 'the pool to hear every terminated connection');
    expect(heard.every((err) => isConnectionError(err)), heard.map((e) => e.message).join('; ')).to.equal(true);
    await database.ping();
  });

  it('a connection terminated inside a transaction fails that transaction as unavailable, and the next one works', async () => {
    heard.length = 0;
    // As the connecting role: the request roles may not signal its backends.
    const failed = await database.db
      .transaction()
      .execute((trx) => sql`select pg_terminate_backend(pg_backend_pid())`.execute(trx))
      .then(() => undefined, (err: unknown) => err);
    expect(asUnavailable(failed), String(failed)).to.not.equal(undefined);
    await eventually(() => heard.length > 0, 'the pool to hear the terminated connection');
    const { rows } = await database.asSystem((trx) => sql<{ one: number }>`select 1 as one`.execute(trx));
    expect(rows).to.deep.equal([{ one: 1 }]);
  });

  /** Inside a transaction: its backend is terminated from outside (as a pooler's restart cuts it), then it goes on. */
  const loseConnection = async (trx: Tx) => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
    const pid = rows[0]!.pid;
    await sql`select pg_terminate_backend(${pid})`.execute(admin.db);
    const gone = async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`.execute(admin.db)).rows.length === 0;
    await eventually(gone, 'the terminated backend to end');
  };

  it('an event-writing transaction whose connection is lost while it runs runs again: its change and its event are stored and published once', async () => {
    const t = await createTenant();
    const bus = new EventBus();
    const published: string[] = [];
    bus.subscribe((events) => published.push(...events.map((e) => e.envelope.id)));
    let runs = 0;
    const { id, eventId } = await inTenantTransaction(database, bus, t.tenantId, async (trx, emit) => {
      runs += 1;
      const label = await trx
        .insertInto('labels')
        .values({ id: newId('label'), tenant_id: t.tenantId, name: `retried-${runs}`, color: '#123456', created_at: new Date(), updated_at: new Date() })
        .returning('id')
        .executeTakeFirstOrThrow();
      const eventId = await emit('webhook.test', { webhook_id: 'wh_retry' });
      if (runs === 1) {
        await loseConnection(trx);
        await sql`select 1`.execute(trx);
      }
      return { id: label.id, eventId };
    });
    expect(runs, 'run again once').to.equal(2);
    expect(published).to.deep.equal([eventId]);
    const stored = await database.withTenant(t.tenantId, async (trx) => ({
      labels: await trx.selectFrom('labels').select('name').where('name', 'like', 'retried-%').execute(),
      events: await trx.selectFrom('events').select('id').where('type', '=', 'webhook.test').execute(),
    }));
    expect(stored.labels, 'only the second run committed').to.deep.equal([{ name: 'retried-2' }]);
    expect(stored.events.map((e) => e.id)).to.deep.equal([eventId]);
    expect(id).to.be.a('string');
  });

  it('every transaction runs again after a lost connection, those that write no event and the system role\'s too', async () => {
    const t = await createTenant();
    let runs = 0;
    const name = await database.withTenant(t.tenantId, async (trx) => {
      runs += 1;
      const name = `plain-${runs}`;
      await trx.insertInto('labels').values({ id: newId('label'), tenant_id: t.tenantId, name, color: '#123456', created_at: new Date(), updated_at: new Date() }).execute();
      if (runs === 1) {
        await loseConnection(trx);
        await sql`select 1`.execute(trx);
      }
      return name;
    });
    expect(runs, 'run again once').to.equal(2);
    expect(name).to.equal('plain-2');
    const labels = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('labels').select('name').where('name', 'like', 'plain-%').execute());
    expect(labels, 'only the second run committed').to.deep.equal([{ name: 'plain-2' }]);
    let systemRuns = 0;
    const tenants = await database.asSystem(async (trx) => {
      systemRuns += 1;
      if (systemRuns === 1) await loseConnection(trx);
      return (await sql<{ n: number }>`select count(*)::int as n from tenants where id = ${t.tenantId}`.execute(trx)).rows[0]!.n;
    });
    expect([systemRuns, tenants]).to.deep.equal([2, 1]);
  });

  it('with once, or when connecting fails, a lost connection is not run again', async () => {
    const t = await createTenant();
    let runs = 0;
    const failed = await database
      .withTenant(
        t.tenantId,
        async (trx) => {
          runs += 1;
          await loseConnection(trx);
          await sql`select 1`.execute(trx);
        },
        { once: true },
      )
      .then(() => undefined, (err: unknown) => err);
    expect(asUnavailable(failed), String(failed)).to.not.equal(undefined);
    expect(runs).to.equal(1);
    const unreachable = await openDatabase({ databaseUrl: `postgres://chat@127.0.0.1:${await closedPort()}/none`, dataDir: '.', poolMax: 1 });
    try {
      let started = 0;
      const refused = await unreachable
        .withTenant(t.tenantId, async () => void (started += 1))
        .then(() => undefined, (err: unknown) => err);
      expect(asUnavailable(refused), String(refused)).to.not.equal(undefined);
      expect(started).to.equal(0);
    } finally {
      await unreachable.close();
    }
  });
});

describe('one process per embedded data directory', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'chat-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const open = () => openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1 });
  const lockFile = () => join(dir, 'pglite.lock');

  it('a second open is refused while the first holds the directory, and allowed after it closes', async () => {
    const first = await open();
    try {
      expect(await readFile(lockFile(), 'utf8')).to.equal(`${process.pid}\n`);
      const refused = await open().then(
        (db) => db.close().then(() => undefined),
        (err: unknown) => err,
      );
      expect(refused).to.be.instanceOf(DataDirLockedError);
      expect((refused as Error).message).to.contain(`in use by process ${process.pid}`);
    } finally {
      await first.close();
    }
    expect(existsSync(lockFile())).to.equal(false);
    const again = await open();
    await again.close();
  });

  it('a lock left by a process that is gone is taken over', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    const deadPid = child.pid!;
    await new Promise((resolve) => child.once('exit', resolve));
    await writeFile(lockFile(), `${deadPid}\n`);
    const db = await open();
    expect(await readFile(lockFile(), 'utf8')).to.equal(`${process.pid}\n`);
    await db.close();
  });

  it('npm run seed beside a running service is refused at once and says to stop the service', async () => {
    const held = await open();
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' };
      delete env.DATABASE_URL;
      delete env.REDIS_URL;
      const child = spawn(process.execPath, ['scripts/seed.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, output).to.equal(75);
      expect(output).to.contain(`in use by process ${process.pid}`).and.contain('stop the service');
      expect(output).not.to.contain('demo tenant');
      // The holder's data is untouched and still usable.
      await held.ping();
    } finally {
      await held.close();
    }
  });
});
