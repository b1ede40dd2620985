import { createHash } from 'node:crypto';
import { expect } from 'chai';
import request from 'supertest';
import { VISITOR_NOTICES } from '../../src/conversations/conversation.service.ts';
import { newId, newUuid } from '../../src/shared/ids.ts';
import type { PresenceStore } from '../../src/presence/presence.ts';
import {
  addMember,
  createConversation,
  createTenant,
  createVisitor,
  eventsOf,
  login,
  messagesOf,
  type TestTenant,
} from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function post(path: string, token: string, body?: object) {
  const { app } = await getHarness();
  const req = request(app).post(`/api/v1/conversations${path}`).set(bearer(token));
  return body === undefined ? req : req.send(body);
}

async function department(t: TestTenant, memberIds: string[]) {
  const { app } = await getHarness();
  const res = await request(app).post('/api/v1/departments').set(bearer(t.owner.accessToken)).send({ name: `D ${newUuid()}`, member_ids: memberIds }).expect(201);
  return res.body.id as string;
}

async function closed(t: TestTenant) {
  const c = await createConversation(t);
  await post(`/${c.id}/close`, t.owner.accessToken).then((r) => expect(r.status).to.equal(200));
  return c;
}

describe('conversations', () => {
  describe('create, get, list', () => {
    it('a member who starts one with a first message is assigned to it; events conversation.created and message.created', async () => {
      const t = await createTenant();
      const visitor = await createVisitor(t);
      const c = await createConversation(t, { visitor_id: visitor, subject: 'Hello', message: 'Hi there!', priority: 'high' });
      expect(c).to.include({ status: 'assigned', assigned_user_id: t.owner.userId, assigned_to: t.owner.userId, visitor_id: visitor, subject: 'Hello', priority: 'high', last_message: 'Hi there!', bot_state: 'off', unread_count: 0 });
      expect((await eventsOf(t, c.id)).map((e) => e.type)).to.deep.equal(['conversation.created', 'message.created']);
    });

    it('a path parameter reaches the handler decoded, as the validator read it', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const encoded = c.id.replace('_', '%5F').replace(/-/g, '%2D');
      const res = await request(app).get(`/api/v1/conversations/${encoded}`).set(bearer(t.owner.accessToken)).expect(200);
      expect(res.body.id).to.equal(c.id);
    });

    it('an answer carries the weak ETag express makes (length, SHA-1), and a GET that names it gets 304', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const res = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).expect(200);
      const bytes = Buffer.from(res.text, 'utf8');
      expect(res.headers.etag).to.equal(`W/"${bytes.length.toString(16)}-${createHash('sha1').update(bytes).digest('base64').slice(0, 27)}"`);
      const again = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).set('If-None-Match', res.headers.etag!);
      expect(again.status).to.equal(304);
    });

    it('without a message it waits open and unassigned', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      expect(c).to.include({ status: 'open', assigned_user_id: null, last_message: null, closed_at: null });
    });

    it('needs a visitor or a contact that exists in the tenant; a foreign department is 422', async () => {
      const t = await createTenant();
      const other = await createTenant();
      expectProblem(await post('', t.owner.accessToken, { subject: 'x' }), 400, 'ERR_VALIDATION');
      expectProblem(await post('', t.owner.accessToken, { visitor_id: await createVisitor(other) }), 404, 'ERR_NOT_FOUND');
      const foreignDept = await department(other, []);
      expectProblem(await post('', t.owner.accessToken, { visitor_id: await createVisitor(t), department_id: foreignDept }), 422, 'ERR_INVALID_DEPARTMENT');
    });

    it('lists newest activity first, with filters and the seed\'s pagination object', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const a = await createConversation(t, { priority: 'low' });
      const b = await createConversation(t, { message: 'about my invoice' });
      const c = await createConversation(t, { subject: 'Refund' });
      const list = async (qs: string) => (await request(app).get(`/api/v1/conversations${qs}`).set(bearer(t.owner.accessToken)).expect(200)).body;
      const all = await list('');
      expect(all.data.map((x: { id: string }) => x.id)).to.deep.equal([c.id, b.id, a.id]);
      expect(all.pagination).to.deep.equal({ total: 3, limit: 20, offset: 0, has_more: false, next_cursor: null });
      expect((await list('?status=open')).data.map((x: { id: string }) => x.id)).to.deep.equal([c.id, a.id]);
      expect((await list('?assigned_to=me')).data.map((x: { id: string }) => x.id)).to.deep.equal([b.id]);
      expect((await list(`?assigned_to=${t.owner.userId}`)).data.map((x: { id: string }) => x.id)).to.deep.equal([b.id]);
      expect((await list('?assigned_to=none')).data.map((x: { id: string }) => x.id)).to.deep.equal([c.id, a.id]);
      expect((await list('?priority=low')).data.map((x: { id: string }) => x.id)).to.deep.equal([a.id]);
      expect((await list('?q=INVOICE')).data.map((x: { id: string }) => x.id)).to.deep.equal([b.id]);
      expect((await list('?q=refund')).data.map((x: { id: string }) => x.id)).to.deep.equal([c.id]);
      expect((await list('?status=open&limit=1')).pagination).to.include({ total: 2, limit: 1, has_more: true });
    });

    it('cursor pages walk the whole list once, in order; offset and cursor together are refused', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const made = [];
      for (let i = 0; i < 7; i++) made.push((await createConversation(t)).id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: request.Response = await request(app).get(`/api/v1/conversations?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set(bearer(t.owner.accessToken)).expect(200);
        seen.push(...res.body.data.map((x: { id: string }) => x.id));
        cursor = res.body.pagination.next_cursor;
      } while (cursor);
      expect(seen).to.deep.equal([...made].reverse());
      expectProblem(await request(app).get('/api/v1/conversations?offset=3&cursor=abc').set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
      expectProblem(await request(app).get('/api/v1/conversations?cursor=not-a-cursor').set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
      expectProblem(await request(app).get('/api/v1/conversations?limit=101').set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
    });
  });

  describe('transfer', () => {
    it('to a member: assigned, the note kept internal, a notice without names, and conversation.transferred with the seed\'s fields', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      const res = await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId, note: 'VIP customer, be nice' });
      expect(res.status).to.equal(200);
      expect(res.body.message).to.be.a('string').and.not.empty;
      expect(res.body.conversation).to.include({ id: c.id, status: 'assigned', assigned_user_id: agent.userId, assigned_to: agent.userId });
      const messages = await messagesOf(t, c.id);
      const note = messages.find((m) => m.type === 'note')!;
      expect(note).to.include({ internal: true, content: 'VIP customer, be nice', sender_id: t.owner.userId });
      const notice = messages.find((m) => m.type === 'system')!;
      expect(notice).to.include({ internal: false, content: VISITOR_NOTICES.transferred, sender_id: null });
      expect(notice.content).not.to.contain('Member').and.not.to.contain(agent.email);
      const transferred = (await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.transferred');
      expect(transferred).to.have.length(1);
      expect(transferred[0]!.data).to.deep.equal({ conversation_id: c.id, assigned_user_id: agent.userId, department_id: null });
      expect(transferred[0]!.recipients).to.deep.equal([agent.userId]);
    });

    it('accepts the bare uuid of a user and answers with the usr_ form', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      const res = await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId.slice(4) });
      expect(res.status).to.equal(200);
      expect(res.body.conversation.assigned_user_id).to.equal(agent.userId);
    });

    it('needs exactly one target: ERR_TRANSFER_TARGET (400), decided before the conversation is looked up', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      const dept = await department(t, [agent.userId]);
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, {}), 400, 'ERR_TRANSFER_TARGET');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { note: 'x' }), 400, 'ERR_TRANSFER_TARGET');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId, department_id: dept }), 400, 'ERR_TRANSFER_TARGET');
      expectProblem(await post(`/${newId('conversation')}/transfer`, t.owner.accessToken, {}), 400, 'ERR_TRANSFER_TARGET');
      expectProblem(await post(`/${newId('conversation')}/transfer`, t.owner.accessToken, { user_id: agent.userId }), 404, 'ERR_NOT_FOUND');
    });

    it('a note over 2000 characters is refused by the schema', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      const res = await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId, note: 'x'.repeat(2001) });
      expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/body/note');
      expect((await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId, note: 'x'.repeat(2000) })).status).to.equal(200);
    });

    it('a closed conversation is 409 ERR_CONVERSATION_CLOSED, even for a bad target (state before target)', async () => {
      const t = await createTenant();
      const other = await createTenant();
      const agent = await addMember(t);
      const c = await closed(t);
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: agent.userId }), 409, 'ERR_CONVERSATION_CLOSED');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: other.owner.userId }), 409, 'ERR_CONVERSATION_CLOSED');
    });

    it('target checks: not in the team 422 ERR_USER_NOT_IN_TENANT, lite seat 422 ERR_ASSIGNEE_LITE_SEAT, foreign department 422 ERR_INVALID_DEPARTMENT', async () => {
      const t = await createTenant();
      const other = await createTenant();
      const lite = await addMember(t, { seat: 'lite' });
      const invited = await addMember(t, { status: 'invited' });
      const c = await createConversation(t);
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: other.owner.userId }), 422, 'ERR_USER_NOT_IN_TENANT');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: invited.userId }), 422, 'ERR_USER_NOT_IN_TENANT');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: newId('user') }), 422, 'ERR_USER_NOT_IN_TENANT');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: lite.userId }), 422, 'ERR_ASSIGNEE_LITE_SEAT');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: await department(other, []) }), 422, 'ERR_INVALID_DEPARTMENT');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: newUuid() }), 422, 'ERR_INVALID_DEPARTMENT');
      const after = await getHarness().then(({ app }) => request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)));
      expect(after.body).to.include({ status: 'open', assigned_user_id: null });
      expect((await eventsOf(t, c.id)).map((e) => e.type)).to.deep.equal(['conversation.created']);
    });

    it('a department with no active full-seat member is 409 ERR_DEPARTMENT_NO_AGENTS', async () => {
      const t = await createTenant();
      const lite = await addMember(t, { seat: 'lite' });
      const c = await createConversation(t);
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: await department(t, [lite.userId]) }), 409, 'ERR_DEPARTMENT_NO_AGENTS');
      expectProblem(await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: await department(t, []) }), 409, 'ERR_DEPARTMENT_NO_AGENTS');
    });

    it('a department whose members are all offline still gets its transfer; the one with fewest open conversations', async () => {
      const t = await createTenant();
      const busy = await addMember(t);
      const idle = await addMember(t);
      const dept = await department(t, [busy.userId, idle.userId]);
      await createConversation(t).then((c) => post(`/${c.id}/assign`, t.owner.accessToken, { user_id: busy.userId }));
      const c = await createConversation(t);
      const res = await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: dept });
      expect(res.status).to.equal(200);
      expect(res.body.conversation).to.include({ assigned_user_id: idle.userId, department_id: dept });
      const transferred = (await eventsOf(t, c.id)).find((e) => e.type === 'conversation.transferred')!;
      expect(transferred.data).to.deep.equal({ conversation_id: c.id, assigned_user_id: idle.userId, department_id: dept });
    });

    it('among equals, the member who waited longest since their last assignment', async () => {
      const t = await createTenant();
      const first = await addMember(t);
      const second = await addMember(t);
      const dept = await department(t, [first.userId, second.userId]);
      const c1 = await createConversation(t);
      const r1 = await post(`/${c1.id}/transfer`, t.owner.accessToken, { department_id: dept });
      await post(`/${c1.id}/close`, t.owner.accessToken);
      const c2 = await createConversation(t);
      const r2 = await post(`/${c2.id}/transfer`, t.owner.accessToken, { department_id: dept });
      expect(r2.body.conversation.assigned_user_id).not.to.equal(r1.body.conversation.assigned_user_id);
    });

    it('online members come first, then away, then offline, whatever their load', async () => {
      const h = await getHarness();
      const t = await createTenant();
      const offline = await addMember(t);
      const away = await addMember(t);
      const online = await addMember(t);
      const presence: PresenceStore = {
        presenceOf: async (_tenant, ids) => new Map(ids.map((id) => [id, id === online.userId ? 'online' : id === away.userId ? 'away' : 'offline'])),
      };
      const app = h.appWith({}, { presence });
      const dept = await department(t, [offline.userId, away.userId, online.userId]);
      for (let i = 0; i < 2; i++) await createConversation(t).then((c) => post(`/${c.id}/assign`, t.owner.accessToken, { user_id: online.userId }));
      const c = await createConversation(t);
      const res = await request(app).post(`/api/v1/conversations/${c.id}/transfer`).set(bearer(t.owner.accessToken)).send({ department_id: dept }).expect(200);
      expect(res.body.conversation.assigned_user_id).to.equal(online.userId);
      const withoutOnline: PresenceStore = { presenceOf: async (_t, ids) => new Map(ids.map((id) => [id, id === away.userId ? 'away' : 'offline'])) };
      const c2 = await createConversation(t);
      const res2 = await request(h.appWith({}, { presence: withoutOnline })).post(`/api/v1/conversations/${c2.id}/transfer`).set(bearer(t.owner.accessToken)).send({ department_id: dept }).expect(200);
      expect(res2.body.conversation.assigned_user_id).to.equal(away.userId);
    });

    it('API keys and lite seats are refused (403)', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const agent = await addMember(t);
      const lite = await addMember(t, { seat: 'lite' });
      const c = await createConversation(t);
      const key = (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'k', scopes: ['conversations:write'] })).body.key;
      const viaKey = await request(app).post(`/api/v1/conversations/${c.id}/transfer`).set('X-API-Key', key).set('X-Tenant-ID', t.tenantId).send({ user_id: agent.userId });
      expectProblem(viaKey, 403, 'ERR_USER_TOKEN_REQUIRED');
      expectProblem(await post(`/${c.id}/transfer`, await login(lite.email), { user_id: agent.userId }), 403, 'ERR_LITE_SEAT');
    });
  });

  describe('close and reopen', () => {
    it('close: closed, a notice and a pending survey with its prompt, messages kept, conversation.closed', async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t, { message: 'first words' });
      const res = await post(`/${c.id}/close`, t.owner.accessToken);
      expect(res.status).to.equal(200);
      expect(res.body.conversation).to.include({ status: 'closed' });
      expect(res.body.conversation.closed_at).to.be.a('string');
      const messages = await messagesOf(t, c.id);
      expect(messages.map((m) => [m.type, m.content])).to.deep.equal([
        ['text', 'first words'],
        ['system', VISITOR_NOTICES.closed],
        ['survey', VISITOR_NOTICES.survey],
      ]);
      const surveys = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('surveys').selectAll().where('conversation_id', '=', c.id).execute());
      expect(surveys).to.have.length(1);
      expect(surveys[0]).to.include({ status: 'pending', rating: null });
      const closedEvent = (await eventsOf(t, c.id)).find((e) => e.type === 'conversation.closed')!;
      expect(closedEvent.data).to.deep.equal({ conversation_id: c.id, survey_id: surveys[0]!.id, closed_at: res.body.conversation.closed_at });
      expectProblem(await post(`/${c.id}/close`, t.owner.accessToken), 409, 'ERR_CONVERSATION_CLOSED');
    });

    it('reopen: open and unassigned, department and bot state kept, a notice, conversation.reopened with only conversation_id', async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const agent = await addMember(t);
      const dept = await department(t, [agent.userId]);
      const c = await createConversation(t);
      await post(`/${c.id}/transfer`, t.owner.accessToken, { department_id: dept });
      await database.withTenant(t.tenantId, (trx) => trx.updateTable('conversations').set({ bot_state: 'handed_off' }).where('id', '=', c.id).execute());
      await post(`/${c.id}/close`, t.owner.accessToken);
      const res = await post(`/${c.id}/reopen`, t.owner.accessToken);
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['conversation']);
      expect(res.body.conversation).to.include({ status: 'open', assigned_user_id: null, assigned_to: null, department_id: dept, bot_state: 'handed_off', closed_at: null });
      const reopened = (await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.reopened');
      expect(reopened).to.have.length(1);
      expect(reopened[0]!.data).to.deep.equal({ conversation_id: c.id });
      expect((await messagesOf(t, c.id)).at(-1)).to.include({ type: 'system', content: VISITOR_NOTICES.reopened, internal: false });
    });

    it('reopening what is not closed is 409 ERR_CONVERSATION_NOT_CLOSED; API keys and lite seats are refused', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const lite = await addMember(t, { seat: 'lite' });
      const c = await createConversation(t);
      expectProblem(await post(`/${c.id}/reopen`, t.owner.accessToken), 409, 'ERR_CONVERSATION_NOT_CLOSED');
      const shut = await closed(t);
      const key = (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'k', scopes: ['conversations:write'] })).body.key;
      expectProblem(await request(app).post(`/api/v1/conversations/${shut.id}/reopen`).set('X-API-Key', key).set('X-Tenant-ID', t.tenantId), 403, 'ERR_USER_TOKEN_REQUIRED');
      expectProblem(await post(`/${shut.id}/reopen`, await login(lite.email)), 403, 'ERR_LITE_SEAT');
    });
  });

  describe('PUT', () => {
    it('status closed acts as close; the status it already has changes nothing', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const put = (body: object) => request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send(body);
      const res = await put({ status: 'closed' }).expect(200);
      expect(res.body.status).to.equal('closed');
      const types = (await eventsOf(t, c.id)).map((e) => e.type);
      expect(types.filter((x) => x === 'conversation.closed')).to.have.length(1);
      await put({ status: 'closed' }).expect(200);
      expect((await eventsOf(t, c.id)).map((e) => e.type)).to.deep.equal(types);
    });

    it('status open on a closed conversation acts as reopen, and needs a user token', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const c = await closed(t);
      const key = (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'k', scopes: ['conversations:write'] })).body.key;
      expectProblem(await request(app).put(`/api/v1/conversations/${c.id}`).set('X-API-Key', key).set('X-Tenant-ID', t.tenantId).send({ status: 'open' }), 403, 'ERR_USER_TOKEN_REQUIRED');
      const res = await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send({ status: 'open' }).expect(200);
      expect(res.body).to.include({ status: 'open', assigned_user_id: null });
      expect((await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.reopened')).to.have.length(1);
      // An API key may still change priority.
      await request(app).put(`/api/v1/conversations/${c.id}`).set('X-API-Key', key).set('X-Tenant-ID', t.tenantId).send({ priority: 'urgent' }).expect(200);
    });

    it('priority and subject changes emit conversation.updated naming what changed; bad values are 400', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const res = await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send({ priority: 'urgent', subject: 'Billing' }).expect(200);
      expect(res.body).to.include({ priority: 'urgent', subject: 'Billing' });
      const updated = (await eventsOf(t, c.id)).find((e) => e.type === 'conversation.updated')!;
      expect((updated.data as { changed: string[] }).changed).to.deep.equal(['priority', 'subject']);
      expectProblem(await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send({ priority: 'critical' }), 400, 'ERR_VALIDATION');
      expectProblem(await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send({ status: 'assigned' }), 400, 'ERR_VALIDATION');
      expectProblem(await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).send({}), 400, 'ERR_VALIDATION');
    });
  });

  describe('assign', () => {
    it('assigns and unassigns, with conversation.assigned; closed is 409; the target is checked like a transfer\'s', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const lite = await addMember(t, { seat: 'lite' });
      const c = await createConversation(t);
      const assigned = await post(`/${c.id}/assign`, t.owner.accessToken, { user_id: agent.userId });
      expect(assigned.body.conversation).to.include({ status: 'assigned', assigned_user_id: agent.userId });
      const unassigned = await post(`/${c.id}/assign`, t.owner.accessToken, { user_id: null });
      expect(unassigned.body.conversation).to.include({ status: 'open', assigned_user_id: null });
      const events = (await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.assigned').map((e) => e.data);
      expect(events).to.deep.equal([
        { conversation_id: c.id, assigned_user_id: agent.userId, previous_assigned_user_id: null },
        { conversation_id: c.id, assigned_user_id: null, previous_assigned_user_id: agent.userId },
      ]);
      expectProblem(await post(`/${c.id}/assign`, t.owner.accessToken, { user_id: lite.userId }), 422, 'ERR_ASSIGNEE_LITE_SEAT');
      expectProblem(await post(`/${c.id}/assign`, t.owner.accessToken, { user_id: newId('user') }), 422, 'ERR_USER_NOT_IN_TENANT');
      expectProblem(await post(`/${c.id}/assign`, t.owner.accessToken, {}), 400, 'ERR_VALIDATION');
      const shut = await closed(t);
      expectProblem(await post(`/${shut.id}/assign`, t.owner.accessToken, { user_id: agent.userId }), 409, 'ERR_CONVERSATION_CLOSED');
    });

    it('a member who leaves the team hands their conversations back: open, unassigned', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      await post(`/${c.id}/assign`, t.owner.accessToken, { user_id: agent.userId });
      await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${agent.userId}`).set(bearer(t.owner.accessToken)).expect(200);
      const after = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).expect(200);
      expect(after.body).to.include({ status: 'open', assigned_user_id: null });
      expect((await eventsOf(t, c.id)).at(-1)).to.deep.include({ type: 'conversation.assigned' });
    });
  });

  describe('concurrency', () => {
    it('parallel transfers leave one consistent result, each with its own event and notice', async () => {
      const t = await createTenant();
      const agents = await Promise.all([addMember(t), addMember(t), addMember(t)]);
      const c = await createConversation(t);
      const results = await Promise.all(agents.map((a) => post(`/${c.id}/transfer`, t.owner.accessToken, { user_id: a.userId })));
      expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200]);
      const { app } = await getHarness();
      const final = (await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken))).body;
      const transfers = (await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.transferred');
      expect(transfers).to.have.length(3);
      // The last event written is the state the conversation ended in.
      expect((transfers.at(-1)!.data as { assigned_user_id: string }).assigned_user_id).to.equal(final.assigned_user_id);
      expect((await messagesOf(t, c.id)).filter((m) => m.type === 'system')).to.have.length(3);
    });

    it('parallel closes: exactly one succeeds, with one survey and one conversation.closed', async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const results = await Promise.all([1, 2, 3].map(() => post(`/${c.id}/close`, t.owner.accessToken)));
      expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409, 409]);
      const surveys = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('surveys').select('id').where('conversation_id', '=', c.id).execute());
      expect(surveys).to.have.length(1);
      expect((await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.closed')).to.have.length(1);
    });

    it('a close racing a reopen ends in a state its events tell exactly', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      for (let round = 0; round < 5; round++) {
        const c = await closed(t);
        const [reopen, close] = await Promise.all([post(`/${c.id}/reopen`, t.owner.accessToken), post(`/${c.id}/close`, t.owner.accessToken)]);
        expect(reopen.status).to.equal(200);
        expect(close.status).to.be.oneOf([200, 409]);
        const final = (await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken))).body;
        const lifecycle = (await eventsOf(t, c.id)).map((e) => e.type).filter((x) => x === 'conversation.closed' || x === 'conversation.reopened');
        expect(final.status).to.equal(lifecycle.at(-1) === 'conversation.closed' ? 'closed' : 'open');
        expect(lifecycle.length).to.equal(close.status === 200 ? 3 : 2);
      }
    });
  });

  describe('isolation', () => {
    it('every conversation operation on another tenant\'s conversation is 404 and changes nothing', async () => {
      const { app } = await getHarness();
      const a = await createTenant();
      const b = await createTenant();
      const agentB = await addMember(b);
      const c = await createConversation(b);
      const token = a.owner.accessToken;
      const asA = (r: request.Test) => r.set(bearer(token));
      expectProblem(await asA(request(app).get(`/api/v1/conversations/${c.id}`)), 404, 'ERR_NOT_FOUND');
      expectProblem(await asA(request(app).put(`/api/v1/conversations/${c.id}`)).send({ priority: 'high' }), 404, 'ERR_NOT_FOUND');
      for (const [path, body] of [
        ['assign', { user_id: null }],
        ['transfer', { user_id: a.owner.userId }],
        ['close', undefined],
        ['reopen', undefined],
      ] as const) {
        const res = await post(`/${c.id}/${path}`, token, body);
        expectProblem(res, 404, 'ERR_NOT_FOUND');
        expect(res.text).not.to.contain(agentB.userId);
      }
      expectProblem(await asA(request(app).get(`/api/v1/messages/${c.id}`)), 404, 'ERR_NOT_FOUND');
      expectProblem(await asA(request(app).post(`/api/v1/messages/${c.id}/read`)), 404, 'ERR_NOT_FOUND');
      expectProblem(await asA(request(app).post('/api/v1/messages')).send({ conversation_id: c.id, content: 'hi' }), 404, 'ERR_NOT_FOUND');
      const list = await asA(request(app).get('/api/v1/conversations')).expect(200);
      expect(list.body.data).to.deep.equal([]);
      expect((await eventsOf(b, c.id)).map((e) => e.type)).to.deep.equal(['conversation.created']);
    });
  });
});

describe('conversation counts at scale', () => {
  it('total is exact at any size for status, assignee and department; capped, then estimated and flagged, for the rest', async function () {
    this.timeout(120_000);
    const { app, database } = await getHarness();
    const { seedConversations } = await import('../../scripts/bench/seed-conversations.ts');
    const t = await createTenant();
    await seedConversations(database, t.tenantId, 10_050);
    const list = async (query: string) => (await request(app).get(`/api/v1/conversations?limit=5&${query}`).set(bearer(t.owner.accessToken)).expect(200)).body.pagination;
    // Every third seeded conversation is closed (3,350), the rest open and unassigned, in no department.
    expect(await list('')).to.include({ total: 10_050, has_more: true }).and.not.to.have.property('total_is_estimate');
    expect(await list('status=open')).to.include({ total: 6700 }).and.not.to.have.property('total_is_estimate');
    expect(await list('status=closed')).to.include({ total: 3350 }).and.not.to.have.property('total_is_estimate');
    expect(await list('status=open&assigned_to=none')).to.include({ total: 6700 }).and.not.to.have.property('total_is_estimate');
    expect(await list('assigned_to=me')).to.include({ total: 0, has_more: false });
    // Free text is counted up to 10,000, then estimated, and says so.
    const searched = await list('q=Question');
    expect(searched).to.include({ total_is_estimate: true, has_more: true });
    expect(searched.total).to.be.at.least(10_001);
    // Priority (a quarter of them: 2,513 low) is below the cap: counted exactly.
    expect(await list('priority=low')).to.include({ total: 2513 }).and.not.to.have.property('total_is_estimate');
  });
});
