import { expect } from 'chai';
import type { Express } from 'express';
import request from 'supertest';
import { createConversation, createTenant, type TestTenant } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { type WorkflowApp, startWorkflowApp } from '../support/workflow-app.ts';
import { eventually } from '../support/eventually.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('workflows: the inside / outside business hours condition', () => {
  let app: Express;
  let started: WorkflowApp;
  const tenants: string[] = [];

  before(async () => {
    started = await startWorkflowApp({ retryDelaysMs: [50] });
    app = started.app;
  });
  after(() => started.stop(tenants));

  const workflow = async (t: TestTenant, hours: 'open' | 'closed') =>
    (
      await request(app)
        .post('/api/v1/workflows')
        .set(bearer(t.owner.accessToken))
        .send({
          name: `When ${hours}`,
          trigger: { type: 'conversation.created' },
          conditions: [{ field: 'conversation.business_hours', operator: 'equals', value: hours }],
          actions: [{ type: 'send_message', content: hours === 'closed' ? 'We are closed; we answer tomorrow from 9.' : 'Someone will be with you shortly.' }],
        })
        .expect(201)
    ).body.id as string;

  const finished = (t: TestTenant, id: string) =>
    eventually(async () => {
      const runs = (await request(app).get(`/api/v1/workflows/${id}/runs`).set(bearer(t.owner.accessToken)).expect(200)).body.data;
      return runs.length === 1 && runs[0].status !== 'pending' && runs[0];
    }, `the run of ${id}`);

  it('outside hours the "closed" workflow runs and the "open" one is skipped; without hours (always open) the reverse', async () => {
    const t = await createTenant();
    tenants.push(t.tenantId);
    const auth = bearer(t.owner.accessToken);
    await request(app).put('/api/v1/business-hours').set(auth).send({ hours: { time_zone: 'Europe/Berlin', weekly: {} } }).expect(200);
    const whenClosed = await workflow(t, 'closed');
    const whenOpen = await workflow(t, 'open');
    await createConversation(t, {}, t.owner.accessToken, app);
    expect((await finished(t, whenClosed)).status).to.equal('succeeded');
    expect(await finished(t, whenOpen)).to.include({ status: 'skipped', skip_reason: 'conditions' });

    const u = await createTenant();
    tenants.push(u.tenantId);
    const closedU = await workflow(u, 'closed');
    const openU = await workflow(u, 'open');
    await createConversation(u, {}, u.owner.accessToken, app);
    expect((await finished(u, openU)).status).to.equal('succeeded');
    expect((await finished(u, closedU)).status).to.equal('skipped');
  });

  it('a value other than open or closed is a 400 naming it', async () => {
    const t = await createTenant();
    const res = await request(app)
      .post('/api/v1/workflows')
      .set(bearer(t.owner.accessToken))
      .send({ name: 'W', trigger: { type: 'conversation.created' }, conditions: [{ field: 'conversation.business_hours', operator: 'equals', value: 'maybe' }], actions: [{ type: 'close' }] });
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(body.errors).to.deep.equal([{ path: '/body/conditions/0/value', message: 'must be one of open, closed' }]);
  });
});
