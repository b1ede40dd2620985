import { expect } from 'chai';
import request from 'supertest';
import { addMember, createConversation, createTenant, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

// Two instances on one database and one Redis (run with DATABASE_URL and REDIS_URL): conversations
// arriving on both at once, agents connected to one, presence read through Redis by the other.
describe('routing across instances (PostgreSQL + Redis)', function () {
  this.timeout(60_000);
  const redisUrl = process.env.REDIS_URL;
  let one: RealtimeServer;
  let two: RealtimeServer;

  before(async function () {
    if (!redisUrl) this.skip();
    one = await startRealtime({ redisUrl });
    two = await startRealtime({ redisUrl });
  });
  after(async () => {
    await one?.close();
    await two?.close();
  });

  it('N conversations created at once on two instances over K agents of capacity C: each gets exactly C, the rest wait, none is given twice', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(one.app).put(`/api/v1/routing/capacities/${t.owner.userId}`).set(auth).send({ capacity: 0 }).expect(200);
    const agents = [await addMember(t), await addMember(t), await addMember(t)];
    for (const a of agents) await request(one.app).put(`/api/v1/routing/capacities/${a.userId}`).set(auth).send({ capacity: 3 }).expect(200);
    const sockets = await Promise.all(agents.map(async (a) => connect(two.wsUrl, bearer(await login(a.email)))));
    await request(one.app).put('/api/v1/routing').set(auth).send({ routing: 'least_loaded' }).expect(200);
    await Promise.all(Array.from({ length: 14 }, (_, i) => createConversation(t, {}, t.owner.accessToken, i % 2 === 0 ? one.app : two.app)));
    // Every run the creations started (and any they made follow) has ended on both.
    await Promise.all([one, two].map((rt) => rt.services.routing.wake(t.tenantId)));
    const rows = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('conversations').select(['id', 'status', 'assigned_user_id']).execute());
    const per = agents.map((a) => rows.filter((r) => r.assigned_user_id === a.userId).length);
    expect(per).to.deep.equal([3, 3, 3]);
    expect(rows.filter((r) => r.status === 'open')).to.have.length(5);
    const given = await database.withTenant(t.tenantId, (trx) =>
      trx.selectFrom('events').select('conversation_id').where('type', '=', 'conversation.assigned').execute(),
    );
    expect(new Set(given.map((g) => g.conversation_id)).size).to.equal(9);
    expect(given).to.have.length(9);
    for (const s of sockets) s.close();
  });
});
