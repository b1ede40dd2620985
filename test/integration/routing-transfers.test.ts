import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import type { Express } from 'express';
import request from 'supertest';
import { buildApp, type Services } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import { loadContract } from '../../src/http/contract.ts';
import type { Presence, PresenceStore } from '../../src/presence/presence.ts';
import { addMember, createConversation, createTenant, eventsOf, login, type TestTenant } from '../support/factories.ts';
import { eventually } from '../support/eventually.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

// Transfers, handoffs and arrivals going through routing (docs/hours-and-routing.md): the department's mode
// and capacity decide, nobody available leaves the conversation queued (conversation.queued), and the
// conversation's answers carry its queue position and since when its visitor waits.

const SITE = 'https://shop.example';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const asVisitor = (token: string) => ({ Authorization: `Bearer ${token}`, Origin: SITE });

class FakePresence implements PresenceStore {
  readonly online = new Set<string>();
  async presenceOf(_tenantId: string, userIds: string[]): Promise<Map<string, Presence>> {
    return new Map(userIds.map((id) => [id, this.online.has(id) ? 'online' : 'offline']));
  }
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema({ $id: 'chat', components: loadContract().document.components });
/** The event's payload against the contract's schema for it. */
function expectPayload(event: { type: string; data: unknown }, schema: string) {
  const validate = ajv.getSchema(`chat#/components/schemas/${schema}`)!;
  expect(validate(event.data), JSON.stringify(validate.errors)).to.equal(true);
}

describe('routing: transfers, handoffs, the queue in answers and events', function () {
  this.timeout(60_000);
  const presence = new FakePresence();
  let app: Express;
  let services: Services;
  /** A second service on the same database (another instance): its own bus, its own routing. */
  let other: { app: Express; services: Services };

  before(async () => {
    const h = await getHarness();
    ({ app, services } = buildApp({ ...h.deps, bus: new EventBus(), presence }));
    other = buildApp({ ...h.deps, bus: new EventBus(), presence });
  });
  after(() => {
    services.routing.stop();
    other.services.routing.stop();
  });

  /** A tenant whose owner takes nothing from routing, a department with agents (online ones given), its mode. */
  async function scene(options: { agents: { online: boolean; capacity: number | null }[]; routing: 'least_loaded' | 'round_robin' | 'manual' }) {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(app).put(`/api/v1/routing/capacities/${t.owner.userId}`).set(auth).send({ capacity: 0 }).expect(200);
    const agents: string[] = [];
    const emails = new Map<string, string>();
    for (const a of options.agents) {
      const { userId, email } = await addMember(t);
      agents.push(userId);
      emails.set(userId, email);
      await request(app).put(`/api/v1/routing/capacities/${userId}`).set(auth).send({ capacity: a.capacity }).expect(200);
      if (a.online) presence.online.add(userId);
    }
    const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: 'Support', member_ids: agents }).expect(201)).body.id as string;
    await request(app).patch(`/api/v1/departments/${dept}/routing`).set(auth).send({ routing: options.routing }).expect(200);
    return { t, auth, agents, dept, emails };
  }

  /** A visitor's conversation from the bubble, with their first message: open, in no department. */
  async function visitorConversation(t: TestTenant, content = 'Hello?') {
    const auth = bearer(t.owner.accessToken);
    let widget = (await request(app).get('/api/v1/widgets').set(auth).expect(200)).body.data[0];
    if (!widget) {
      widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Shop' }).expect(201)).body;
      await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    }
    const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
    const token = session.body.visitor_token as string;
    const started = await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content }).expect(201);
    return { id: started.body.id as string, token };
  }

  const assignTo = (t: TestTenant, id: string, userId: string) => request(app).post(`/api/v1/conversations/${id}/assign`).set(bearer(t.owner.accessToken)).send({ user_id: userId }).expect(200);
  const show = async (t: TestTenant, id: string) => (await request(app).get(`/api/v1/conversations/${id}`).set(bearer(t.owner.accessToken)).expect(200)).body;
  const typed = async (t: TestTenant, id: string, type: string) => (await eventsOf(t, id)).filter((e) => e.type === type);

  it('a transfer to a department that routes goes to its available agent under capacity (least loaded), with conversation.assigned by routing', async () => {
    // a: online but full; b: online with room; c: offline.
    const s = await scene({ agents: [{ online: true, capacity: 1 }, { online: true, capacity: 2 }, { online: false, capacity: 5 }], routing: 'least_loaded' });
    const [a, b] = s.agents as [string, string, string];
    const busy = await createConversation(s.t);
    await assignTo(s.t, busy.id, a);
    const x = await createConversation(s.t);
    await assignTo(s.t, x.id, s.t.owner.userId);
    const moved = await request(app).post(`/api/v1/conversations/${x.id}/transfer`).set(s.auth).send({ department_id: s.dept }).expect(200);
    expect(moved.body.conversation).to.include({ status: 'assigned', assigned_user_id: b, department_id: s.dept, queue_position: null });
    expect((await typed(s.t, x.id, 'conversation.transferred')).map((e) => e.data)).to.deep.equal([{ conversation_id: x.id, assigned_user_id: b, department_id: s.dept }]);
    const routed = (await typed(s.t, x.id, 'conversation.assigned')).filter((e) => (e.data as { by?: string }).by === 'routing');
    expect(routed.map((e) => [e.data, e.recipients])).to.deep.equal([[{ conversation_id: x.id, assigned_user_id: b, previous_assigned_user_id: s.t.owner.userId, by: 'routing' }, [b]]]);
  });

  it('nobody available: the transfer leaves it queued (position, waiting since the visitor\'s message, conversation.queued); it goes out when the agent has room', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 1 }], routing: 'least_loaded' });
    const [a] = s.agents as [string];
    const busy = await createConversation(s.t);
    await assignTo(s.t, busy.id, a);
    const first = await visitorConversation(s.t, 'My order is late');
    const second = await visitorConversation(s.t, 'Where is my parcel?');
    const asked = (await request(app).get(`/api/v1/messages/${first.id}`).set(s.auth).expect(200)).body.data.find((m: { content: string }) => m.content === 'My order is late');

    const moved = await request(app).post(`/api/v1/conversations/${first.id}/transfer`).set(s.auth).send({ department_id: s.dept }).expect(200);
    expect(moved.body.conversation).to.include({ status: 'open', assigned_user_id: null, department_id: s.dept, queue_position: 1, waiting_since: asked.created_at });
    await request(app).post(`/api/v1/conversations/${second.id}/transfer`).set(s.auth).send({ department_id: s.dept }).expect(200);
    expect(await show(s.t, second.id)).to.include({ status: 'open', queue_position: 2 });
    const queued = await typed(s.t, first.id, 'conversation.queued');
    expect(queued.map((e) => [e.data, e.internal])).to.deep.equal([
      [{ conversation_id: first.id, department_id: s.dept, reason: 'transferred', queue_position: 1, waiting_since: asked.created_at }, true],
    ]);
    expectPayload(queued[0]!, 'ConversationQueuedData');
    // Nobody is named to an empty assignment.
    expect((await typed(s.t, first.id, 'conversation.transferred')).map((e) => [e.data, e.recipients])).to.deep.equal([
      [{ conversation_id: first.id, assigned_user_id: null, department_id: s.dept }, []],
    ]);
    // The list leaves the figures out (the conversation's own answer has them).
    const listed = (await request(app).get('/api/v1/conversations?status=open').set(s.auth).expect(200)).body.data.find((c: { id: string }) => c.id === first.id);
    expect(listed).to.not.have.property('queue_position');

    // a closes the busy one: the oldest queued goes to a, by routing; the second moves up.
    await request(app).post(`/api/v1/conversations/${busy.id}/close`).set(s.auth).expect(200);
    await eventually(async () => (await show(s.t, first.id)).assigned_user_id === a, 'the queued conversation given to a');
    expect(await show(s.t, first.id)).to.include({ status: 'assigned', queue_position: null, waiting_since: asked.created_at });
    expect(await show(s.t, second.id)).to.include({ status: 'open', queue_position: 1 });
    const given = (await typed(s.t, first.id, 'conversation.assigned')).map((e) => e.data);
    expect(given).to.deep.equal([{ conversation_id: first.id, assigned_user_id: a, previous_assigned_user_id: null, by: 'routing' }]);
    // a answers: the visitor waits for nothing.
    const agentAuth = bearer(await login(s.emails.get(a)!, s.t.tenantId));
    await request(app).post('/api/v1/messages').set(agentAuth).send({ conversation_id: first.id, content: 'On its way!' }).expect(201);
    expect((await show(s.t, first.id)).waiting_since).to.equal(null);
  });

  it('a transfer to a named person is not limited by capacity (capacity limits routing only)', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 1 }], routing: 'least_loaded' });
    const [a] = s.agents as [string];
    const busy = await createConversation(s.t);
    await assignTo(s.t, busy.id, a);
    const x = await createConversation(s.t);
    const moved = await request(app).post(`/api/v1/conversations/${x.id}/transfer`).set(s.auth).send({ user_id: a }).expect(200);
    expect(moved.body.conversation).to.include({ status: 'assigned', assigned_user_id: a });
    expect((await typed(s.t, x.id, 'conversation.assigned')).filter((e) => (e.data as { by?: string }).by === 'routing')).to.deep.equal([]);
  });

  it('a manual department keeps the pick as before: online first, whatever the capacity; no routing events', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 0 }, { online: false, capacity: 5 }], routing: 'manual' });
    const [a] = s.agents as [string, string];
    const x = await createConversation(s.t);
    const moved = await request(app).post(`/api/v1/conversations/${x.id}/transfer`).set(s.auth).send({ department_id: s.dept }).expect(200);
    expect(moved.body.conversation).to.include({ status: 'assigned', assigned_user_id: a });
    expect(await typed(s.t, x.id, 'conversation.queued')).to.deep.equal([]);
  });

  it('errors stay as they were where routing is on: another tenant\'s department 422 ERR_INVALID_DEPARTMENT, one without members 409 ERR_DEPARTMENT_NO_AGENTS', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 1 }], routing: 'round_robin' });
    const theirs = await scene({ agents: [], routing: 'round_robin' });
    const empty = (await request(app).post('/api/v1/departments').set(s.auth).send({ name: 'Nobody' }).expect(201)).body.id;
    await request(app).patch(`/api/v1/departments/${empty}/routing`).set(s.auth).send({ routing: 'least_loaded' }).expect(200);
    const x = await createConversation(s.t);
    expectProblem(await request(app).post(`/api/v1/conversations/${x.id}/transfer`).set(s.auth).send({ department_id: theirs.dept }), 422, 'ERR_INVALID_DEPARTMENT');
    expectProblem(await request(app).post(`/api/v1/conversations/${x.id}/transfer`).set(s.auth).send({ department_id: empty }), 409, 'ERR_DEPARTMENT_NO_AGENTS');
    expect(await show(s.t, x.id)).to.include({ status: 'open', department_id: null });
  });

  it('a bot\'s handoff to a department that routes: to an available agent, or queued (conversation.queued, handed_off)', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 1 }], routing: 'round_robin' });
    const [a] = s.agents as [string];
    const bot = (await request(app).post('/api/v1/bots').set(s.auth).send({ name: 'Faq', kind: 'faq', handoff_department_id: s.dept }).expect(201)).body;
    const widget = (await request(app).post('/api/v1/widgets').set(s.auth).send({ name: 'Shop', settings: { bot_id: bot.id } }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(s.auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    const start = async () => {
      const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
      return (await request(app).post('/api/v1/widget/conversations').set(asVisitor(session.body.visitor_token)).send({ content: 'A person please' }).expect(201)).body.id as string;
    };
    const key = { 'X-API-Key': bot.api_key, 'X-Tenant-ID': s.t.tenantId };
    const one = await start();
    const two = await start();
    // Held by the bot: not in the queue.
    expect(await show(s.t, one)).to.include({ bot_state: 'active', queue_position: null });
    const first = await request(app).post(`/api/v1/conversations/${one}/handoff`).set(key).send({}).expect(200);
    expect(first.body.conversation).to.include({ status: 'assigned', assigned_user_id: a, bot_state: 'handed_off', department_id: s.dept });
    expect((await typed(s.t, one, 'conversation.assigned')).map((e) => e.data)).to.deep.equal([{ conversation_id: one, assigned_user_id: a, previous_assigned_user_id: null, by: 'routing' }]);
    // a is full now: the second waits.
    const second = await request(app).post(`/api/v1/conversations/${two}/handoff`).set(key).send({}).expect(200);
    expect(second.body.conversation).to.include({ status: 'open', assigned_user_id: null, bot_state: 'handed_off', queue_position: 1 });
    const queued = await typed(s.t, two, 'conversation.queued');
    expect(queued.map((e) => (e.data as { reason: string }).reason)).to.deep.equal(['handed_off']);
    expect((await typed(s.t, two, 'conversation.handed_off')).map((e) => e.data)).to.deep.equal([
      { conversation_id: two, bot_id: bot.id, by: 'bot', assigned_user_id: null, department_id: s.dept },
    ]);
  });

  it('arrivals nobody can take are announced once by the routing run (conversation.queued, created), with their positions; none where routing is off', async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(app).put('/api/v1/routing').set(auth).send({ routing: 'least_loaded' }).expect(200);
    // Nobody online at all.
    const one = await visitorConversation(t);
    const two = await visitorConversation(t);
    await services.routing.wake(t.tenantId);
    await services.routing.wake(t.tenantId);
    const q1 = await typed(t, one.id, 'conversation.queued');
    const q2 = await typed(t, two.id, 'conversation.queued');
    expect(q1.map((e) => e.data)).to.deep.equal([{ conversation_id: one.id, department_id: null, reason: 'created', queue_position: 1, waiting_since: (await show(t, one.id)).waiting_since }]);
    expect(q2.map((e) => (e.data as { queue_position: number }).queue_position)).to.deep.equal([2]);
    expectPayload(q1[0]!, 'ConversationQueuedData');
    expect(await show(t, two.id)).to.include({ queue_position: 2 });
    // A manual tenant's new conversations wait for a person, not for routing: no event.
    const manual = await createTenant();
    const m = await visitorConversation(manual);
    await services.routing.wake(manual.tenantId);
    expect(await typed(manual, m.id, 'conversation.queued')).to.deep.equal([]);
    expect(await show(manual, m.id)).to.include({ queue_position: 1 });
  });

  it('the scheduled sweep gives out what no wake-up reached (an agent seen online only now)', async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(app).put(`/api/v1/routing/capacities/${t.owner.userId}`).set(auth).send({ capacity: 0 }).expect(200);
    await request(app).put('/api/v1/routing').set(auth).send({ routing: 'round_robin' }).expect(200);
    const { userId } = await addMember(t);
    const waiting = await visitorConversation(t);
    await services.routing.wake(t.tenantId);
    expect(await show(t, waiting.id)).to.include({ status: 'open', queue_position: 1 });
    // Online now, and nothing told routing (as when presence read on the waking instance missed them).
    presence.online.add(userId);
    expect(await other.services.routing.sweep()).to.be.at.least(1);
    expect(await show(t, waiting.id)).to.include({ status: 'assigned', assigned_user_id: userId, queue_position: null });
  });

  it('transfers racing routing runs on two instances never put an agent over capacity nor give a conversation twice', async () => {
    const s = await scene({ agents: [{ online: true, capacity: 2 }, { online: true, capacity: 2 }], routing: 'least_loaded' });
    const conversations = await Promise.all(Array.from({ length: 12 }, () => createConversation(s.t)));
    const apps = [app, other.app];
    await Promise.all(
      conversations.map((c, i) => request(apps[i % 2]!).post(`/api/v1/conversations/${c.id}/transfer`).set(s.auth).send({ department_id: s.dept }).expect(200)),
    );
    await Promise.all([services.routing.wake(s.t.tenantId), other.services.routing.wake(s.t.tenantId)]);
    const shown = await Promise.all(conversations.map((c) => show(s.t, c.id)));
    for (const agent of s.agents) expect(shown.filter((c) => c.assigned_user_id === agent)).to.have.length(2);
    const waiting = shown.filter((c) => c.status === 'open');
    expect(waiting).to.have.length(8);
    expect(waiting.map((c) => c.queue_position).sort((x, y) => x - y)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const c of conversations) {
      const assigned = (await typed(s.t, c.id, 'conversation.assigned')).filter((e) => (e.data as { assigned_user_id: string | null }).assigned_user_id !== null);
      expect(assigned.length, `assignments of ${c.id}`).to.be.at.most(1);
    }
  });
});

