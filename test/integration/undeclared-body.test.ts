import { expect } from 'chai';
import request from 'supertest';
import { createConversation, createTenant, messagesOf, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (t: TestTenant) => ({ Authorization: `Bearer ${t.owner.accessToken}` });

// The contract declares no body for close, reopen, or any GET and DELETE; the service agrees with it
// (and with the mock and a validating proxy): such a body is a 400, never silently ignored.
describe('a request body the contract does not declare', () => {
  it('close with {"note": ...} is a 400 naming /body, and the conversation stays as it was', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const res = await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t)).send({ note: 'x' });
    const problem = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(problem.errors).to.deep.equal([{ path: '/body', message: 'must be absent: the operation declares no request body' }]);
    const after = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t)).expect(200);
    expect(after.body.conversation?.status ?? after.body.status).to.equal('open');
    expect((await messagesOf(t, c.id)).map((m: { content: string }) => m.content)).not.to.include('x');
  });

  it('reopen with an empty object, and a GET with a body, are 400 too', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t)).expect(200);
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(t)).send({}), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).get('/api/v1/conversations').set(bearer(t)).set('Content-Type', 'text/plain').send('hello'), 400, 'ERR_VALIDATION');
    await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(t)).expect(200);
  });

  it('of any size: past the 1 MiB a declared body may have it is still the 400, never a 413 close does not declare', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const big = JSON.stringify({ note: 'x'.repeat(2 * 1024 * 1024) });
    const res = await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t)).set('Content-Type', 'application/json').send(big);
    expect(expectProblem(res, 400, 'ERR_VALIDATION').errors).to.deep.equal([{ path: '/body', message: 'must be absent: the operation declares no request body' }]);
    const after = (await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t)).expect(200)).body;
    expect(after.conversation?.status ?? after.status).to.equal('open');
    // A declared body past the limit is the 413 its operations declare; a path the contract lacks is a 404.
    expectProblem(await request(app).put(`/api/v1/conversations/${c.id}`).set(bearer(t)).set('Content-Type', 'application/json').send(big), 413, 'ERR_PAYLOAD_TOO_LARGE');
    expectProblem(await request(app).post('/api/v1/nothing-here').set('Content-Type', 'application/json').send(big), 404, 'ERR_NOT_FOUND');
  });

  it('without a body (or with an empty one) close and reopen answer 200', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const closed = await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t)).set('Content-Length', '0').expect(200);
    expect(closed.body.conversation.status).to.equal('closed');
    await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(t)).expect(200);
  });

  it('comes after authentication: without a credential it is still a 401', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/close`).send({ note: 'x' }), 401, 'ERR_UNAUTHENTICATED');
  });
});
