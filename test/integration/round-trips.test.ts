import { expect } from 'chai';
import { type KyselyPlugin, sql } from 'kysely';
import net from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { BEGIN_MARK, type Database, EVENT_WRITER_LOCK, openDatabase, ServiceClient } from '../../src/db/database.ts';
import { TransactionAbortedError } from '../../src/db/errors.ts';
import { prepared, statementName } from '../../src/db/prepared.ts';
import { SessionCache } from '../../src/auth/session-cache.ts';
import { createConversation, createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

// What one request costs the database, counted rather than timed: transactions, and the statements sent
// (each a round trip; a transaction adds its own: on PostgreSQL one, the COMMIT, since the BEGIN with the
// role and tenant travels with the first statement; on PGlite, where a round trip is a function call, three).

interface Tally {
  transactions: number;
  statements: string[];
}

/** The harness's database, counting what goes through it: every transaction, every statement Kysely sends. */
function counting(inner: Database, tally: Tally): Database {
  // Counted when a result comes back: Kysely also passes a subquery through transformQuery as it is built
  // (the list page's total is one), but only what is executed comes back.
  const kinds = new WeakMap<object, string>();
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      kinds.set(args.queryId, args.node.kind);
      return args.node;
    },
    transformResult: async (args) => {
      tally.statements.push(kinds.get(args.queryId) ?? 'unknown');
      return args.result;
    },
  };
  return {
    ...inner,
    db: inner.db.withPlugin(plugin),
    withTenant: (tenantId, fn, options) => {
      tally.transactions++;
      return inner.withTenant(tenantId, (trx) => fn(trx.withPlugin(plugin)), options);
    },
    asSystem: (fn) => {
      tally.transactions++;
      return inner.asSystem((trx) => fn(trx.withPlugin(plugin)));
    },
  };
}

describe('round trips per request (session cache warm)', () => {
  const tally: Tally = { transactions: 0, statements: [] };
  const cold: number[] = [];

  async function measure(send: () => Promise<unknown>) {
    tally.transactions = 0;
    await send(); // warms the session cache (and anything else a first request fills)
    cold.push(tally.transactions);
    tally.transactions = 0;
    tally.statements = [];
    await send();
    const own = (await getHarness()).database.kind === 'postgres' ? 1 : 3;
    return { transactions: tally.transactions, statements: tally.statements.length, roundTrips: tally.statements.length + own * tally.transactions };
  }

  it('GET /v1/conversations, GET /v1/conversations/{id} and POST /v1/messages each run one transaction', async () => {
    const h = await getHarness();
    const app = h.appWith({}, { database: counting(h.database, tally), sessions: new SessionCache() });
    const t = await createTenant();
    const c = await createConversation(t);
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };

    // The page, with its exact total (from the counter rows) in the same statement.
    const list = await measure(() => request(app).get('/api/v1/conversations?status=open').set(auth).expect(200));
    const own = h.database.kind === 'postgres' ? 1 : 3;
    expect(list).to.deep.equal({ transactions: 1, statements: 1, roundTrips: 1 + own });

    const one = await measure(() => request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200));
    expect(one).to.deep.equal({ transactions: 1, statements: 1, roundTrips: 1 + own });

    const post = await measure(() => request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'hello' }).expect(201));
    expect(post.transactions).to.equal(1);
    // Lock the conversation, the message with its sender's read mark and a reply's report facts (one
    // statement: the facts by a trigger on the insert, migration 2026-12-06T09-00-00), the conversation's
    // last message and its count (one statement), the event.
    expect(post.statements, tally.statements.join(' ')).to.equal(4);
    // Cold, the login and membership check is a transaction of its own: the tally sees it.
    expect(cold).to.deep.equal([2, 1, 1]);
  });
});

describe('a transaction\'s own round trips (PostgreSQL)', () => {
  const url = process.env.DATABASE_URL;
  const tenantId = 'tn_01934f6e-7c1a-7b3e-9a2b-0c1d2e3f4a5b';

  before(function () {
    if (!url) this.skip();
  });

  it('BEGIN and the settings travel with the first statement: one round trip for the three, none for a transaction that runs nothing', async () => {
    const proxy = await countingProxy(url!);
    const sent: { sql: string; params: readonly unknown[] }[] = [];
    const db = await openDatabase({ databaseUrl: proxy.url, dataDir: '.', poolMax: 1, onQuery: (text, params) => sent.push({ sql: text, params }) });
    try {
      await db.asSystem(async () => undefined); // connects (its own round trips)
      const roundTrips = async (fn: () => Promise<unknown>) => {
        const before = proxy.readyForQuery();
        await fn();
        return proxy.readyForQuery() - before;
      };
      let seen: { t: string; r: string }[] = [];
      expect(await roundTrips(async () => {
        seen = (await db.withTenant(tenantId, (trx) => sql<{ t: string; r: string }>`select current_setting('app.tenant_id') as t, current_user as r`.execute(trx))).rows;
      })).to.equal(2);
      expect(seen).to.deep.equal([{ t: tenantId, r: 'chat_app' }]);
      expect(await roundTrips(() => db.withTenant(tenantId, async (trx) => {
        await sql`select 1`.execute(trx);
        await sql`select 2`.execute(trx);
      }, { eventWriter: true }))).to.equal(3);
      expect(await roundTrips(() => db.withTenant(tenantId, async () => 'nothing to do'))).to.equal(0);
      // A tenant of any shape goes as a parameter, never into a statement's text.
      sent.length = 0;
      const odd = "tn_x'); drop table users; --";
      const echoed = await db.withTenant(odd, (trx) => sql<{ t: string }>`select current_setting('app.tenant_id') as t`.execute(trx));
      expect(echoed.rows).to.deep.equal([{ t: odd }]);
      expect(sent.some((s) => s.sql.includes('drop table'))).to.equal(false);
      expect(sent[0]!.params).to.deep.equal(['chat_app', odd, false]);
    } finally {
      await db.close();
      await proxy.close();
    }
  });

  it('on the wire, a list page and a GET are two round trips and a send five (session cache warm)', async () => {
    const h = await getHarness();
    const proxy = await countingProxy(url!);
    const db = await openDatabase({ databaseUrl: proxy.url, dataDir: '.', poolMax: 2 });
    try {
      const app = h.appWith({}, { database: db, sessions: new SessionCache() });
      const t = await createTenant();
      const c = await createConversation(t);
      const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
      const roundTrips = async (send: () => Promise<unknown>) => {
        await send(); // warms the session cache and the connections
        const before = proxy.readyForQuery();
        await send();
        return proxy.readyForQuery() - before;
      };
      expect(await roundTrips(() => request(app).get('/api/v1/conversations?status=open').set(auth).expect(200))).to.equal(2);
      expect(await roundTrips(() => request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200))).to.equal(2);
      // The conversation's lock with the BEGIN in front, the message (with a reply's report facts, by its
      // trigger), the conversation, the event, COMMIT.
      expect(await roundTrips(() => request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'hello' }).expect(201))).to.equal(5);
    } finally {
      await db.close();
      await proxy.close();
    }
  });

  it('settings that fail (a cancelled wait for the writer lock) fail the first statement unrun and leave no aborted transaction in the pool', async () => {
    const sent: string[] = [];
    const db = await openDatabase({ databaseUrl: url, dataDir: '.', poolMax: 1, onQuery: (text) => sent.push(text) });
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      // The exclusive side of the event-writer lock: a writer of this tenant waits in its BEGIN.
      await holder.query('select pg_advisory_lock($1, hashtext($2) & 2147483647)', [EVENT_WRITER_LOCK, tenantId]);
      // The transaction's first statement takes a session's advisory lock, which outlives a rollback: had
      // it run, the lock would still be held. It is a named statement, so the client must also forget that
      // it was sent: it was skipped with the settings, never created.
      const writing = db.withTenant(tenantId, async (trx) => {
        await lockSeven(trx, {});
        return 'wrote';
      }, { eventWriter: true });
      let pid: number | undefined;
      while (pid === undefined) {
        const waiting = await holder.query<{ pid: number }>(
          "select pid from pg_locks where locktype = 'advisory' and not granted and classid = $1::bigint::oid",
          [EVENT_WRITER_LOCK],
        );
        pid = waiting.rows[0]?.pid;
      }
      await holder.query('select pg_cancel_backend($1)', [pid]);
      const failure = await writing.then(() => undefined, (err: Error) => err);
      expect(failure?.message).to.match(/cancel/);
      const ran = await holder.query("select 1 from pg_locks where locktype = 'advisory' and classid = 7 and objid = 7");
      expect(ran.rowCount, 'the statement after the failed settings ran').to.equal(0);
      await holder.query('select pg_advisory_unlock($1, hashtext($2) & 2147483647)', [EVENT_WRITER_LOCK, tenantId]);
      // The pool's one connection serves the next transaction: it was rolled back, not returned aborted,
      // and it prepares the named statement anew instead of calling one that does not exist.
      const next = await db.withTenant(tenantId, async (trx) => {
        await lockSeven(trx, {});
        await sql`select pg_advisory_unlock(7, 7)`.execute(trx);
        return 'next';
      }, { eventWriter: true });
      expect(next).to.equal('next');
      expect(statementName(sent.find((text) => text.includes('pg_advisory_lock(7, 7)'))!), 'the statement is sent by name').to.be.a('string');
    } finally {
      await holder.end();
      await db.close();
    }
  });
});

describe("the pool's client when a transaction's first statement fails before its settings (PostgreSQL)", () => {
  const url = process.env.DATABASE_URL;
  const tenantId = 'tn_01934f6e-7c1a-7b3e-9a2b-0c1d2e3f4a5b';
  let client: ServiceClient;

  beforeEach(async function () {
    if (!url) return this.skip();
    client = new ServiceClient({ connectionString: url });
    await client.connect();
  });
  afterEach(async () => {
    await client?.end();
  });

  // The client as Kysely calls it (its query is typed for pg's many overloads).
  const ask = (text: unknown, values?: unknown[]) =>
    (client.query as unknown as (...args: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>).apply(client, values ? [text, values] : [text]);
  // Whether the statement runs in a transaction of its own (none was left open before it).
  const alone = async () => (await ask('select now() = statement_timestamp() as alone', [])).rows[0]!.alone;

  it('refused before anything is written: what follows is refused, not run without a tenant, until the rollback', async () => {
    await ask(BEGIN_MARK, ['chat_app', tenantId, false]);
    const first = await ask({ text: 'select 1' }).then(() => undefined, (err: Error) => err);
    expect(first?.message).to.match(/first statement/);
    const next = await ask("select current_setting('app.tenant_id', true) as t", []).then(() => undefined, (err: Error) => err);
    expect(next?.message).to.match(/can only be rolled back/);
    await ask('rollback', []);
    expect(await alone()).to.equal(true);
  });

  it('settings that cannot be written: the group is closed, what follows is refused, and the rollback ends what the server began', async () => {
    // A tenant that is no text fails the settings' Bind as it is written, after BEGIN's messages.
    await ask(BEGIN_MARK, ['chat_app', {}, false]);
    const first = await ask('select 1 as one', []).then(() => undefined, (err: Error) => err);
    expect(first).to.be.instanceOf(TypeError);
    const next = await ask('select current_user as r', []).then(() => undefined, (err: Error) => err);
    expect(next?.message).to.match(/can only be rolled back/);
    await ask('rollback', []);
    // The BEGIN the server ran was rolled back: this statement is a transaction of its own, as the login role.
    expect(await alone()).to.equal(true);
  });

  it('asked to commit after that, it says the transaction was rolled back, and it was', async () => {
    await ask(BEGIN_MARK, ['chat_app', {}, false]);
    await ask('select 1 as one', []).catch(() => undefined); // caught, and the caller goes on to commit
    const commit = await ask('commit', []).then(() => undefined, (err: Error) => err);
    expect(commit).to.be.instanceOf(TransactionAbortedError);
    expect(await alone()).to.equal(true);
  });

  it('a COMMIT the server answers ROLLBACK (a failed statement caught) is an error', async () => {
    await ask(BEGIN_MARK, ['chat_app', tenantId, false]);
    await ask('select 1 / 0 as never', []).catch(() => undefined);
    const commit = await ask('commit', []).then(() => undefined, (err: Error) => err);
    expect(commit).to.be.instanceOf(TransactionAbortedError);
    expect(await alone()).to.equal(true);
  });
});

/** A statement sent by name (src/db/prepared.ts) that takes a session's advisory lock. */
const lockSeven = prepared((db) => db.selectNoFrom(sql<boolean>`pg_advisory_lock(7, 7) is not null`.as('locked')));

/** A TCP proxy to PostgreSQL that counts the server's ReadyForQuery messages: one per round trip. */
async function countingProxy(target: string): Promise<{ url: string; readyForQuery(): number; close(): Promise<void> }> {
  const to = new URL(target);
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port || 5432), to.hostname);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      // Server messages: a type byte, then a length that counts itself.
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
        if (pending[0] === 0x5a) count++;
        pending = pending.subarray(1 + pending.readInt32BE(1));
      }
      client.write(chunk);
    });
    client.pipe(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    readyForQuery: () => count,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
