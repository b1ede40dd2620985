import { expect } from 'chai';
import { sql } from 'kysely';
import request from 'supertest';
import { feedHead, readFeed } from '../src/events/feed.repository.ts';
import { writeEvent } from '../src/events/outbox.ts';
import type { Database } from '../src/db/database.ts';
import { getHarness, openTestDatabase } from './support/harness.ts';
import { startThrowawayCluster, type ThrowawayCluster } from './support/pg-cluster.ts';
import { createConversation, createTenant, PASSWORD, uniqueEmail } from './support/factories.ts';
import { connect, startRealtime, type RealtimeServer } from './support/realtime.ts';

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
