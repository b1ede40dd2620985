import { expect } from 'chai';
import { sql } from 'kysely';
import request from 'supertest';
import { feedHead, readFeed } from '../../src/events/feed.repository.ts';
import { insertEventAsFeedRow, type NewEvent } from '../../src/events/event.repository.ts';
import { writeEvent } from '../../src/events/outbox.ts';
import { newId } from '../../src/shared/ids.ts';
import type { Database } from '../../src/db/database.ts';
import { getHarness, openTestDatabase } from '../support/harness.ts';
import { startThrowawayCluster, type ThrowawayCluster } from '../support/pg-cluster.ts';
import { createConversation, createTenant, PASSWORD, type TestTenant, uniqueEmail } from '../support/factories.ts';
import { connect, startRealtime, type RealtimeServer } from '../support/realtime.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The cluster's next transaction id. */
async function nextTxid(database: Database): Promise<bigint> {
  const { rows } = await sql<{ x: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as x`.execute(database.db);
  return BigInt(rows[0]!.x);
}

/**
 * Uses up transaction ids until the next one is at least `target`: each subtransaction that writes gets an
 * id of its own, so one statement burns thousands.
 */
async function burnTxidsTo(database: Database, target: bigint): Promise<void> {
  for (;;) {
    const missing = target - (await nextTxid(database));
    if (missing <= 0n) return;
    const n = Number(missing > 50_000n ? 50_000n : missing);
    await sql
      .raw(
        `DO $$ BEGIN
           CREATE TEMP TABLE IF NOT EXISTS burn (x int);
           FOR i IN 1..${n} LOOP
             BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN OTHERS THEN NULL; END;
           END LOOP;
           DROP TABLE burn;
         END $$`,
      )
      .execute(database.db);
  }
}

const BOUNDARIES = [1_000n, 10_000n, 100_000n];

// The shared PostgreSQL server's transaction ids passed these long ago: on PostgreSQL this runs on a
// throw-away cluster, whose ids start in the hundreds; on PGlite, on a fresh in-memory database.
describe('the event feed across transaction-id digit boundaries (999, 9,999, 99,999)', function () {
  this.timeout(180_000);
  let cluster: ThrowawayCluster | undefined;
  let database: Database;
  let rt: RealtimeServer;
  let token: string;
  let tenantId: string;
  const written: string[] = [];

  before(async function () {
    if (process.env.DATABASE_URL) {
      cluster = await startThrowawayCluster();
      if (!cluster) this.skip();
    }
    database = await openTestDatabase(cluster?.url);
    rt = await startRealtime({ database });
    const registered = await request(rt.app)
      .post('/api/v1/auth/register')
      .send({ email: uniqueEmail('feed'), password: PASSWORD, name: 'Owner', tenant_name: 'Feed' })
      .expect(201);
    token = registered.body.access_token;
    tenantId = registered.body.tenant.id;
    const contact = await request(rt.app).post('/api/v1/contacts').set(bearer(token)).send({ name: 'Visitor' }).expect(201);
    const conversationId = (await request(rt.app).post('/api/v1/conversations').set(bearer(token)).send({ contact_id: contact.body.id }).expect(201)).body.id;
    expect(Number(await nextTxid(database))).to.be.lessThan(Number(BOUNDARIES[0]!) - 5);
    // Events from transactions just below and just above each boundary, several per transaction.
    for (const boundary of BOUNDARIES) {
      await burnTxidsTo(database, boundary - 3n);
      for (let i = 0; i < 6; i++) {
        await database.withTenant(
          tenantId,
          async (trx) => {
            for (let j = 0; j < 2; j++) {
              const stored = await writeEvent(trx, tenantId, 'conversation.reopened', { conversation_id: conversationId }, { conversationId });
              written.push(stored.envelope.id);
            }
          },
          { eventWriter: true },
        );
      }
    }
    const { rows } = await sql<{ txids: string[] }>`select array_agg(distinct txid::text) as txids from events where tenant_id = ${tenantId}`.execute(database.db);
    const txids = rows[0]!.txids.map(BigInt);
    for (const boundary of BOUNDARIES) {
      expect(txids.some((x) => x < boundary) && txids.some((x) => x >= boundary), `events on both sides of ${boundary}`).to.equal(true);
    }
  });

  after(async () => {
    await rt?.close();
    await database?.close();
    cluster?.stop();
  });

  it('GET /v1/events pages through every event once, in order, in pages of every size', async () => {
    const all = async (limit: number) => {
      const ids: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < 500; page++) {
        const res = await request(rt.app)
          .get(`/api/v1/events?limit=${limit}${after ? `&after=${after}` : ''}`)
          .set(bearer(token))
          .expect(200);
        ids.push(...res.body.data.map((e: { id: string }) => e.id));
        if (res.body.data.length === 0) break;
        after = res.body.next_cursor;
      }
      return ids.filter((id) => written.includes(id));
    };
    for (const limit of [1, 3, 7, 100]) expect(await all(limit), `pages of ${limit}`).to.deep.equal(written);
  });

  it('a socket resuming from any event gets exactly the ones after it, in order', async () => {
    for (let i = 0; i < written.length; i += 3) {
      const socket = await connect(`${rt.wsUrl}?last_event_id=${written[i]}`, bearer(token));
      const expected = written.slice(i + 1);
      if (expected.length > 0) await socket.next((f) => f.id === expected[expected.length - 1]);
      // A ping answered after the replay: nothing more is on its way.
      socket.ws.send(JSON.stringify({ type: 'ping' }));
      await socket.next((f) => f.type === 'pong');
      expect(socket.frames.filter((f) => f.id).map((f) => f.id)).to.deep.equal(expected);
      socket.close();
    }
  });

  it('a new stream starts at the newest event, not at the one that sorts last as text', async () => {
    const head = await database.withTenant(tenantId, (trx) => feedHead(trx, tenantId));
    const last = await database.withTenant(tenantId, (trx) =>
      trx.selectFrom('events').select('position').where('id', '=', written[written.length - 1]!).executeTakeFirstOrThrow(),
    );
    expect(head.position).to.equal(Number(last.position));
    const { rows } = await database.withTenant(tenantId, (trx) => readFeed(trx, { tenantId, after: head, limit: 10 }));
    expect(rows).to.deep.equal([]);
  });
});

describe('event writers', () => {
  it('an event written outside an event-writer transaction is refused by the database', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    let error: unknown;
    try {
      await database.withTenant(t.tenantId, (trx) => writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: c.id }, { conversationId: c.id }));
    } catch (err) {
      error = err;
    }
    expect(String(error)).to.match(/event-writer/);
  });
});

describe('the horizon reads the lock table once', function () {
  // pg_locks calls pg_lock_status() wherever it is named. The probe below stands in for it on the reader's
  // search path: its first reading is the real lock table, every later reading lacks the event-writer
  // locks, as if the writer had committed between two readings of one statement. A horizon that reads the
  // table twice then takes a running writer for a non-writer and hands out the events after it.
  const probe = `feed_probe_${process.pid}`;

  before(async function () {
    const { database } = await getHarness();
    // PGlite runs one transaction at a time: a writer cannot be open beside the reader.
    if (database.kind !== 'postgres') this.skip();
    await sql
      .raw(
        `create schema if not exists ${probe};
         create sequence if not exists ${probe}.readings;
         create or replace function ${probe}.lock_table() returns setof pg_catalog.pg_locks language plpgsql as $$
         begin
           if nextval('${probe}.readings') = 1 then
             return query select * from pg_catalog.pg_locks;
           else
             return query select * from pg_catalog.pg_locks where locktype <> 'advisory';
           end if;
         end $$;
         create or replace view ${probe}.pg_locks as select * from ${probe}.lock_table();
         grant usage on schema ${probe} to chat_app;
         grant usage, update on sequence ${probe}.readings to chat_app;
         grant select on ${probe}.pg_locks to chat_app;`,
      )
      .execute(database.db);
  });

  after(async () => {
    const { database } = await getHarness();
    if (database.kind === 'postgres') await sql.raw(`drop schema if exists ${probe} cascade`).execute(database.db);
  });

  it('a writer that commits while the horizon is read still holds back the events after it', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const after = await database.withTenant(t.tenantId, (trx) => feedHead(trx, t.tenantId));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let written!: (id: string) => void;
    const early = new Promise<string>((r) => (written = r));
    const slow = database.withTenant(
      t.tenantId,
      async (trx) => {
        const stored = await writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: c.id }, { conversationId: c.id });
        written(stored.envelope.id);
        await gate;
      },
      { eventWriter: true },
    );
    const earlyId = await early;
    try {
      const late = await database.withTenant(
        t.tenantId,
        (trx) => writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: c.id }, { conversationId: c.id }),
        { eventWriter: true },
      );
      await sql.raw(`select setval('${probe}.readings', 1, false)`).execute(database.db);
      const page = await database.withTenant(t.tenantId, async (trx) => {
        await sql.raw(`set local search_path = ${probe}, pg_catalog, public`).execute(trx);
        return readFeed(trx, { tenantId: t.tenantId, after, limit: 10 });
      });
      const { rows } = await sql<{ n: string }>`select last_value::text as n from ${sql.raw(probe)}.readings`.execute(database.db);
      expect(Number(rows[0]!.n), 'the probe was read').to.be.at.least(1);
      expect(page.rows.map((r) => r.id)).to.not.include(late.envelope.id);
      expect(page.heldBack).to.equal(true);
      release();
      await slow;
      const next = await database.withTenant(t.tenantId, (trx) => readFeed(trx, { tenantId: t.tenantId, after, limit: 10 }));
      expect(next.rows.map((r) => r.id)).to.deep.equal([earlyId, late.envelope.id]);
    } finally {
      release();
      await slow;
    }
  });
});

describe("a writer's place in the feed: final, or not (PostgreSQL)", function () {
  // PGlite runs one transaction at a time: a place there is always final, and nothing can run beside it.
  before(async function () {
    if ((await getHarness()).database.kind !== 'postgres') this.skip();
  });

  const eventOf = (t: TestTenant, conversationId: string): NewEvent => ({
    id: newId('event'),
    tenant_id: t.tenantId,
    type: 'conversation.reopened',
    data: { conversation_id: conversationId },
    conversation_id: conversationId,
    internal: false,
    recipients: [],
    created_at: new Date(),
  });

  /** Writes an event as a send does when a stream of this instance wants it handed over. */
  const place = async (t: TestTenant, conversationId: string, options: { searchPath?: string } = {}) => {
    const { database } = await getHarness();
    return database.withTenant(
      t.tenantId,
      async (trx) => {
        if (options.searchPath) await sql.raw(`set local search_path = ${options.searchPath}`).execute(trx);
        return insertEventAsFeedRow(trx, eventOf(t, conversationId), { concurrent: true });
      },
      { eventWriter: true },
    );
  };

  /**
   * A view that stands in for pg_locks on the search path of a transaction that puts its schema first,
   * made before the enclosing tests and dropped after them: its name.
   */
  const lockTableProbe = (prefix: string, select: string) => {
    const schema = `${prefix}_${process.pid}`;
    before(async () => {
      const { database } = await getHarness();
      await sql
        .raw(
          `create schema if not exists ${schema};
           create or replace view ${schema}.pg_locks as ${select};
           grant usage on schema ${schema} to chat_app;
           grant select on ${schema}.pg_locks to chat_app;`,
        )
        .execute(database.db);
    });
    after(async () => {
      const { database } = await getHarness();
      await sql.raw(`drop schema if exists ${schema} cascade`).execute(database.db);
    });
    return schema;
  };

  /** A transaction held open until released; `started` once its work has run in it. */
  const holdOpen = (run: (database: Database) => Promise<unknown>) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    const done = getHarness().then(({ database }) =>
      run({
        ...database,
        withTenant: (tenantId, fn, options) => database.withTenant(tenantId, async (trx) => (await fn(trx), ready(), await gate), options),
      } as Database),
    );
    return { started, release: async () => (release(), await done) };
  };

  const writerOf = (t: TestTenant, conversationId: string, withTxid: boolean) =>
    holdOpen((database) =>
      database.withTenant(
        t.tenantId,
        async (trx) => {
          if (withTxid) await writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: conversationId }, { conversationId });
          else await sql`select 1`.execute(trx);
        },
        { eventWriter: true },
      ),
    );

  it('is final, after the tenant\'s last event, when nothing else runs', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const head = await database.withTenant(t.tenantId, (trx) => feedHead(trx, t.tenantId));
    const placed = await place(t, c.id);
    expect(placed.alone).to.equal(true);
    expect(placed.after).to.deep.equal(head);
  });

  it('is final beside transactions that cannot write the tenant\'s events below it', async () => {
    const t = await createTenant();
    const other = await createTenant();
    const c = await createConversation(t);
    const otherConversation = await createConversation(other);
    // A transaction with a txid and no writer lock, a writer of another tenant, and a writer of this tenant
    // with no txid yet (it will have a higher one: its events come after).
    const held = [
      holdOpen((database) => database.withTenant(t.tenantId, async (trx) => void (await sql`select pg_current_xact_id()`.execute(trx)))),
      writerOf(other, otherConversation.id, true),
      writerOf(t, c.id, false),
    ];
    try {
      await Promise.all(held.map((h) => h.started));
      expect((await place(t, c.id)).alone).to.equal(true);
    } finally {
      for (const h of held) await h.release();
    }
  });

  it('is not final while a writer of the tenant with a lower txid runs, and is again once it has committed', async () => {
    const t = await createTenant();
    const c = await createConversation(t);
    const slow = writerOf(t, c.id, true);
    try {
      await slow.started;
      expect((await place(t, c.id)).alone).to.equal(false);
    } finally {
      await slow.release();
    }
    expect((await place(t, c.id)).alone).to.equal(true);
  });

  describe("when the lock on a lower writer's id is a waiter's, not its own", () => {
    // A backend that waited for a transaction (a row it had locked) holds a share lock on its id, granted,
    // for a moment after it ended. The probe shows every transaction lock so, and no writer lock: as if each
    // lower transaction had ended and a waiter held its id.
    const probe = lockTableProbe(
      'waiter_probe',
      `select locktype, database, relation, page, tuple, virtualxid, transactionid, classid, objid, objsubid, virtualtransaction, pid,
              case when locktype = 'transactionid' then 'ShareLock' else mode end as mode, granted, fastpath, waitstart
       from pg_catalog.pg_locks where locktype <> 'advisory'`,
    );

    it('a place is not final, and a read holds back what follows the writer', async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const after = await database.withTenant(t.tenantId, (trx) => feedHead(trx, t.tenantId));
      const slow = writerOf(t, c.id, true);
      try {
        await slow.started;
        const searchPath = `${probe}, pg_catalog, public`;
        expect((await place(t, c.id, { searchPath })).alone).to.equal(false);
        const page = await database.withTenant(t.tenantId, async (trx) => {
          await sql.raw(`set local search_path = ${searchPath}`).execute(trx);
          return readFeed(trx, { tenantId: t.tenantId, after, limit: 10 });
        });
        expect(page.rows, 'nothing after the writer').to.deep.equal([]);
        expect(page.heldBack).to.equal(true);
      } finally {
        await slow.release();
      }
    });
  });

  describe('when a lower transaction ends between the snapshot and the lock table\'s reading', () => {
    // The probe stands in for pg_locks on the writer's search path, without any transaction lock: as if every
    // transaction the snapshot saw running had ended before the lock table was read. One that ended so may
    // have committed events the snapshot does not see.
    const probe = lockTableProbe('place_probe', `select * from pg_catalog.pg_locks where locktype <> 'transactionid'`);

    it('is not final', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      // It writes no events (no writer lock): read as ended, it might have.
      const lower = holdOpen((database) => database.withTenant(t.tenantId, async (trx) => void (await sql`select pg_current_xact_id()`.execute(trx))));
      try {
        await lower.started;
        expect((await place(t, c.id, { searchPath: `${probe}, pg_catalog, public` })).alone).to.equal(false);
        expect((await place(t, c.id)).alone, 'read as it is').to.equal(true);
      } finally {
        await lower.release();
      }
    });
  });
});
