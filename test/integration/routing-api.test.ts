import { expect } from 'chai';
import request from 'supertest';
import { MemoryPresenceTracker } from '../../src/realtime/presence-tracker.ts';
import { RoutingPresence } from '../../src/routing/presence-wakeup.ts';
import { addMember, createConversation, createTenant, login } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('routing (API)', function () {
  this.timeout(30_000);
  let rt: RealtimeServer;
  before(async () => {
    const presence = new RoutingPresence(new MemoryPresenceTracker());
    rt = await startRealtime({ presence });
    // As src/server.ts wires it: a member coming online wakes routing.
    presence.onMemberOnline((tenantId) => void rt.services.routing.wake(tenantId));
  });
  after(async () => {
    await rt.close();
  });

  it('settings: the tenant default, a department\'s own (null follows the tenant), a member\'s capacity', async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(rt.app).get('/api/v1/routing').set(auth).expect(200, { routing: 'manual' });
    await request(rt.app).put('/api/v1/routing').set(auth).send({ routing: 'least_loaded' }).expect(200, { routing: 'least_loaded' });
    const dept = (await request(rt.app).post('/api/v1/departments').set(auth).send({ name: 'Support' }).expect(201)).body;
    await request(rt.app).get(`/api/v1/departments/${dept.id}/routing`).set(auth).expect(200, { routing: null, effective_routing: 'least_loaded', return_after_minutes: null });
    await request(rt.app)
      .patch(`/api/v1/departments/${dept.id}/routing`)
      .set(auth)
      .send({ routing: 'round_robin', return_after_minutes: 15 })
      .expect(200, { routing: 'round_robin', effective_routing: 'round_robin', return_after_minutes: 15 });
    await request(rt.app).patch(`/api/v1/departments/${dept.id}/routing`).set(auth).send({ routing: null }).expect(200, { routing: null, effective_routing: 'least_loaded', return_after_minutes: 15 });
    const agent = await addMember(t);
    await request(rt.app).put(`/api/v1/routing/capacities/${agent.userId}`).set(auth).send({ capacity: 2 }).expect(200, { user_id: agent.userId, capacity: 2 });
    await request(rt.app).put(`/api/v1/routing/capacities/${agent.userId}`).set(auth).send({ capacity: null }).expect(200, { user_id: agent.userId, capacity: null });
  });

  it('errors: 400 (a capacity below 0, an unknown mode, an empty change), 401, 403 for an agent, 404 for another tenant\'s department, 422 for someone not in the team', async () => {
    const t = await createTenant();
    const other = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const agent = await addMember(t);
    const dept = (await request(rt.app).post('/api/v1/departments').set(auth).send({ name: 'Support' }).expect(201)).body;
    let body = expectProblem(await request(rt.app).put(`/api/v1/routing/capacities/${agent.userId}`).set(auth).send({ capacity: -1 }), 400, 'ERR_VALIDATION');
    expect(body.errors[0].path).to.equal('/body/capacity');
    body = expectProblem(await request(rt.app).put('/api/v1/routing').set(auth).send({ routing: 'random' }), 400, 'ERR_VALIDATION');
    expect(body.errors[0].path).to.equal('/body/routing');
    expectProblem(await request(rt.app).patch(`/api/v1/departments/${dept.id}/routing`).set(auth).send({}), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).patch(`/api/v1/departments/${dept.id}/routing`).set(auth).send({ return_after_minutes: 0 }), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).get('/api/v1/routing'), 401, 'ERR_UNAUTHENTICATED');
    const agentAuth = bearer(await login(agent.email, t.tenantId));
    await request(rt.app).get('/api/v1/routing').set(agentAuth).expect(200);
    expectProblem(await request(rt.app).put('/api/v1/routing').set(agentAuth).send({ routing: 'manual' }), 403, 'ERR_FORBIDDEN');
    expectProblem(await request(rt.app).put(`/api/v1/routing/capacities/${agent.userId}`).set(agentAuth).send({ capacity: 9 }), 403, 'ERR_FORBIDDEN');
    const theirs = (await request(rt.app).post('/api/v1/departments').set(bearer(other.owner.accessToken)).send({ name: 'Theirs' }).expect(201)).body;
    expectProblem(await request(rt.app).get(`/api/v1/departments/${theirs.id}/routing`).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(rt.app).patch(`/api/v1/departments/${theirs.id}/routing`).set(auth).send({ routing: 'manual' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(rt.app).put(`/api/v1/routing/capacities/${other.owner.userId}`).set(auth).send({ capacity: 1 }), 404, 'ERR_NOT_FOUND');
  });

  it('end to end: a conversation created while nobody is online waits; the agent logging in gets it (by routing); one created then goes at once', async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const agent = await addMember(t);
    await request(rt.app).put(`/api/v1/routing/capacities/${t.owner.userId}`).set(auth).send({ capacity: 0 }).expect(200);
    const first = await createConversation(t, {}, t.owner.accessToken, rt.app);
    expect(first.status).to.equal('open');
    await request(rt.app).put('/api/v1/routing').set(auth).send({ routing: 'least_loaded' }).expect(200);
    const socket = await connect(rt.wsUrl, bearer(await login(agent.email)));
    const given = await socket.next((f) => f.type === 'conversation.assigned' && f.data.conversation_id === first.id);
    expect(given.data).to.deep.equal({ conversation_id: first.id, assigned_user_id: agent.userId, previous_assigned_user_id: null, by: 'routing' });
    const second = await createConversation(t, {}, t.owner.accessToken, rt.app);
    await socket.next((f) => f.type === 'conversation.assigned' && f.data.conversation_id === second.id);
    const shown = await request(rt.app).get(`/api/v1/conversations/${second.id}`).set(auth).expect(200);
    expect(shown.body).to.include({ status: 'assigned', assigned_user_id: agent.userId });
    socket.close();
  });
});
