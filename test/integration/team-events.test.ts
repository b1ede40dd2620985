import { expect } from 'chai';
import request from 'supertest';
import { writeEvent } from '../../src/events/outbox.ts';
import type { PresenceStore } from '../../src/presence/presence.ts';
import { addMember, createConversation, createTenant, createVisitor } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('team members', () => {
  it('include=presence adds presence and the count of conversations that are not closed', async () => {
    const h = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    await addMember(t, { status: 'invited' });
    const dept = await request(h.app).post('/api/v1/departments').set(bearer(t.owner.accessToken)).send({ name: 'Sales', member_ids: [agent.userId] }).expect(201);
    for (let i = 0; i < 2; i++) {
      const c = await createConversation(t);
      await request(h.app).post(`/api/v1/conversations/${c.id}/assign`).set(bearer(t.owner.accessToken)).send({ user_id: agent.userId }).expect(200);
    }
    const done = await createConversation(t, { message: 'mine' });
    await request(h.app).post(`/api/v1/conversations/${done.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
    const presence: PresenceStore = { presenceOf: async (_t, ids) => new Map(ids.map((id) => [id, id === agent.userId ? 'online' : 'away'])) };
    const app = h.appWith({}, { presence });
    const res = await request(app).get('/api/v1/team/members?include=presence').set(bearer(t.owner.accessToken)).expect(200);
    expect(res.body.data).to.have.length(2);
    expect(res.body.data[0]).to.deep.include({ user_id: t.owner.userId, role: 'owner', presence: 'away', open_conversations: 0, department_ids: [] });
    expect(res.body.data[1]).to.deep.include({ user_id: agent.userId, presence: 'online', open_conversations: 2, department_ids: [dept.body.id] });
    const plain = await request(app).get('/api/v1/team/members').set(bearer(t.owner.accessToken)).expect(200);
    expect(plain.body.data[0]).not.to.have.property('presence');
    expectProblem(await request(app).get('/api/v1/team/members?include=everything').set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
  });

  it('without a realtime presence store everyone reads offline', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).get('/api/v1/team/members?include=presence').set(bearer(t.owner.accessToken)).expect(200);
    expect(res.body.data[0].presence).to.equal('offline');
  });
});

describe('visitors', () => {
  it('GET /v1/visitors/{id} shows the tenant\'s visitor; another tenant\'s is not found', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const mine = await createVisitor(a, { name: 'Vera' });
    const theirs = await createVisitor(b);
    const res = await request(app).get(`/api/v1/visitors/${mine}`).set(bearer(a.owner.accessToken)).expect(200);
    expect(res.body).to.include({ id: mine, name: 'Vera', contact_id: null });
    expectProblem(await request(app).get(`/api/v1/visitors/${theirs}`).set(bearer(a.owner.accessToken)), 404, 'ERR_NOT_FOUND');
  });
});

describe('the events feed', () => {
  it('hands out every event once, in order, resuming from next_cursor', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: c.id, content: 'a' }).expect(201);
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
    const feed = (after?: string) =>
      request(app).get(`/api/v1/events?limit=2${after ? `&after=${after}` : ''}`).set(bearer(t.owner.accessToken)).expect(200);
    const types: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await feed(cursor);
      types.push(...res.body.data.map((e: { type: string }) => e.type));
      for (const e of res.body.data) expect(e).to.include({ tenant_id: t.tenantId }).and.have.keys('id', 'type', 'tenant_id', 'created_at', 'data');
      if (res.body.data.length === 0) {
        expect(res.body.next_cursor).to.equal(cursor);
        break;
      }
      cursor = res.body.next_cursor;
    }
    expect(types).to.deep.equal(['conversation.created', 'message.created', 'message.created', 'message.created', 'conversation.closed']);
    // Later events continue from the same cursor.
    await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(t.owner.accessToken)).expect(200);
    const more = await feed(cursor);
    expect(more.body.data.map((e: { type: string }) => e.type)).to.deep.equal(['message.created', 'conversation.reopened']);
    expect(more.body.data[1].data).to.deep.equal({ conversation_id: c.id });
  });

  it('holds back an event whose transaction is still running, and hands it out before later ones once it commits', async function () {
    const { database } = await getHarness();
    if (database.kind !== 'postgres') this.skip(); // PGlite runs one transaction at a time: nothing can interleave.
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const feed = async (after?: string) =>
      (await request(app).get(`/api/v1/events?limit=100${after ? `&after=${after}` : ''}`).set(bearer(t.owner.accessToken)).expect(200)).body;
    const start = (await feed()).next_cursor as string;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let wrote!: () => void;
    const written = new Promise<void>((r) => (wrote = r));
    // Transaction A writes its event first but commits last.
    const slow = database.withTenant(t.tenantId, async (trx) => {
      await writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: c.id }, { conversationId: c.id });
      wrote();
      await gate;
    }, { eventWriter: true });
    await written;
    // Transaction B writes and commits while A is still open.
    await database.withTenant(t.tenantId, (trx) =>
      writeEvent(trx, t.tenantId, 'conversation.assigned', { conversation_id: c.id, assigned_user_id: null, previous_assigned_user_id: null }),
    { eventWriter: true });
    try {
      const during = await feed(start);
      expect(during.data).to.deep.equal([]);
    } finally {
      // An open transaction holds back every reader of the outbox: never leave it open.
      release();
      await slow;
    }
    const after = await feed(start);
    expect(after.data.map((e: { type: string }) => e.type)).to.deep.equal(['conversation.reopened', 'conversation.assigned']);
    expect((await feed(after.next_cursor)).data).to.deep.equal([]);
  });

  it('refuses a cursor it did not give out, and shows no other tenant\'s events', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    await createConversation(b);
    expectProblem(await request(app).get('/api/v1/events?after=garbage').set(bearer(a.owner.accessToken)), 400, 'ERR_VALIDATION');
    const res = await request(app).get('/api/v1/events').set(bearer(a.owner.accessToken)).expect(200);
    expect(res.body.data).to.deep.equal([]);
  });
});
