import { expect } from 'chai';
import type { Express } from 'express';
import { sql } from 'kysely';
import pino from 'pino';
import request from 'supertest';
import { buildApp, type Services } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import { Scheduler } from '../../src/jobs/scheduler.ts';
import { createMailer, type Mailer } from '../../src/mail/mailer.ts';
import { newUuid } from '../../src/shared/ids.ts';
import { IDLE_JOB, WORKFLOW_CURSOR, WorkflowRunner, conditionHolds, fieldValue, idleJob } from '../../src/workflows/workflow.runner.ts';
import { type TestTenant, addMember, createConversation, createTenant, login, messagesOf } from '../support/factories.ts';
import { type Harness, getHarness, sentMail } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const TIMEOUT_MS = 400;
const quiet = pino({ level: 'silent' });

describe('workflows', () => {
  let h: Harness;
  let app: Express;
  let services: Services;
  let bus: EventBus;
  let runner: WorkflowRunner;
  const receivers: Receiver[] = [];
  const tenants: TestTenant[] = [];
  const extraRunners: WorkflowRunner[] = [];

  /** A runner like the service's, on the test app's bus, with retries after 50 to 150 ms. */
  const newRunner = (options: { mailer?: Mailer; allowPrivate?: boolean; retryDelaysMs?: number[] } = {}) =>
    new WorkflowRunner({
      database: h.database,
      logger: quiet,
      bus,
      mailer: options.mailer ?? h.deps.mailer,
      conversations: services.conversations,
      allowPrivate: options.allowPrivate ?? true,
      timeoutMs: TIMEOUT_MS,
      retryDelaysMs: options.retryDelaysMs ?? [50, 100, 150],
      pollMs: 50,
    });

  before(async () => {
    h = await getHarness();
    bus = new EventBus();
    const built = buildApp({ ...h.deps, bus });
    app = built.app;
    services = built.services;
    runner = newRunner();
    runner.start();
  });

  after(async () => {
    await runner.stop();
    for (const r of extraRunners.splice(0)) await r.stop();
    // On a shared PostgreSQL database, runs left pending would be retried by the next run's runner.
    const ids = tenants.map((t) => t.tenantId);
    if (ids.length > 0) await h.database.asSystem((trx) => trx.deleteFrom('workflows').where('tenant_id', 'in', ids).execute());
    for (const r of receivers.splice(0)) await r.close();
  });

  /** Runs fn with the shared runner stopped (the test decides which runners read the feed), then starts a fresh one. */
  async function withoutSharedRunner(fn: () => Promise<void>) {
    await runner.stop();
    try {
      await fn();
    } finally {
      runner = newRunner();
      runner.start();
    }
  }

  async function tenant() {
    const t = await createTenant();
    tenants.push(t);
    return t;
  }

  async function receiver(options: Parameters<typeof startReceiver>[0] = {}) {
    const r = await startReceiver(options);
    receivers.push(r);
    return r;
  }

  async function createWorkflow(t: TestTenant, body: Record<string, unknown>, via = app) {
    const res = await request(via).post('/api/v1/workflows').set(bearer(t.owner.accessToken)).send({ name: 'W', ...body });
    if (res.status !== 201) throw new Error(`createWorkflow: ${res.status} ${res.text}`);
    return res.body as { id: string; secret: string };
  }

  const runsOf = async (t: TestTenant, workflowId: string, query = '') =>
    (await request(app).get(`/api/v1/workflows/${workflowId}/runs?limit=100${query}`).set(bearer(t.owner.accessToken)).expect(200)).body.data as Record<string, any>[];

  /** The runs once `count` of them have finished (succeeded, failed or skipped), oldest first. */
  const finishedRuns = (t: TestTenant, workflowId: string, count = 1) =>
    eventually(async () => {
      const runs = await runsOf(t, workflowId);
      return runs.length >= count && runs.every((r) => r.status !== 'pending') && runs.reverse();
    }, `${count} finished run(s) of ${workflowId}`);

  const conversationOf = async (t: TestTenant, id: string) =>
    (await request(app).get(`/api/v1/conversations/${id}`).set(bearer(t.owner.accessToken)).expect(200)).body;

  const close = (t: TestTenant, id: string) => request(app).post(`/api/v1/conversations/${id}/close`).set(bearer(t.owner.accessToken)).expect(200);

  const send = (t: TestTenant, conversationId: string, content: string, extra: Record<string, unknown> = {}) =>
    request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conversationId, content, ...extra }).expect(201);

  describe('the API', () => {
    it('create answers the secret once; get, list, update and delete manage the workflow', async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const body = {
        name: 'Close quiet chats',
        trigger: { type: 'conversation.idle', minutes: 30 },
        conditions: [{ field: 'conversation.assigned', operator: 'equals', value: false }],
        actions: [{ type: 'send_message', content: 'We are closing this chat.' }, { type: 'skip_survey' }],
      };
      const created = await request(app).post('/api/v1/workflows').set(auth).send(body).expect(201);
      expect(created.body.id).to.match(/^wf_/);
      expect(created.body.secret).to.match(/^whsec_/);
      expect(created.body).to.deep.include({ ...body, enabled: true });
      const got = await request(app).get(`/api/v1/workflows/${created.body.id}`).set(auth).expect(200);
      expect(got.body).to.not.have.property('secret');
      expect((await request(app).get('/api/v1/workflows').set(auth).expect(200)).body.data.map((w: { id: string }) => w.id)).to.deep.equal([created.body.id]);
      const updated = await request(app).patch(`/api/v1/workflows/${created.body.id}`).set(auth).send({ enabled: false, trigger: { type: 'conversation.closed' } }).expect(200);
      expect(updated.body).to.include({ enabled: false });
      expect(updated.body.trigger).to.deep.equal({ type: 'conversation.closed' });
      expect(updated.body.actions).to.deep.equal(body.actions);
      const runs = await request(app).get(`/api/v1/workflows/${created.body.id}/runs`).set(auth).expect(200);
      expect(runs.body).to.deep.equal({ data: [], pagination: { total: 0, limit: 20, offset: 0, has_more: false, next_cursor: null } });
      await request(app).delete(`/api/v1/workflows/${created.body.id}`).set(auth).expect(200, { id: created.body.id, deleted: true });
      expectProblem(await request(app).get(`/api/v1/workflows/${created.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).get(`/api/v1/workflows/${created.body.id}/runs`).set(auth), 404, 'ERR_NOT_FOUND');
    });

    it('refuses agents, other tenants, and triggers, conditions and actions the rules do not allow', async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const agent = await addMember(t, { role: 'agent' });
      expectProblem(await request(app).get('/api/v1/workflows').set(bearer(await login(agent.email))), 403, 'ERR_FORBIDDEN');
      const valid = { name: 'W', trigger: { type: 'conversation.created' }, actions: [{ type: 'close' }] };
      const bad = async (body: Record<string, unknown>) => expectProblem(await request(app).post('/api/v1/workflows').set(auth).send({ ...valid, ...body }), 400, 'ERR_VALIDATION').errors;
      expect((await bad({ trigger: { type: 'conversation.reopened' } }))[0].path).to.match(/^\/body\/trigger/);
      expect((await bad({ trigger: { type: 'conversation.idle' } }))[0].path).to.match(/^\/body\/trigger/);
      expect((await bad({ actions: [] }))[0].path).to.equal('/body/actions');
      expect((await bad({ actions: [{ type: 'set_priority', priority: 'asap' }] }))[0].path).to.match(/^\/body\/actions\/0/);
      expect((await bad({ conditions: [{ field: 'conversation.colour', operator: 'equals', value: 'red' }] }))[0].path).to.equal('/body/conditions/0/field');
      expect(await bad({ conditions: [{ field: 'message.content', operator: 'contains', value: 'x' }] })).to.deep.equal([
        { path: '/body/conditions/0/field', message: 'message fields need the message.created trigger' },
      ]);
      expect(
        await bad({
          conditions: [
            { field: 'conversation.priority', operator: 'in', value: 'high' },
            { field: 'conversation.priority', operator: 'equals', value: 'asap' },
            { field: 'contact.email', operator: 'is_set', value: 'x' },
            { field: 'conversation.assigned', operator: 'equals', value: 'yes' },
            { field: 'contact.custom_attributes.plan', operator: 'equals' },
          ],
        }),
      ).to.deep.equal([
        { path: '/body/conditions/0/value', message: 'must be a non-empty list with in' },
        { path: '/body/conditions/1/value', message: 'must be one of low, normal, high, urgent' },
        { path: '/body/conditions/2/value', message: 'must be left out with is_set' },
        { path: '/body/conditions/3/value', message: 'must be true or false for conversation.assigned' },
        { path: '/body/conditions/4/value', message: 'is required with equals' },
      ]);
      expectProblem(
        await request(app).post('/api/v1/workflows').set(auth).send({ ...valid, actions: [{ type: 'transfer', department_id: newUuid() }] }),
        422,
        'ERR_INVALID_DEPARTMENT',
      );
      // A webhook action goes only where a webhook endpoint may.
      const strictApp = buildApp({ ...h.deps, bus, config: { ...h.deps.config, webhooks: { allowPrivate: false, requireHttps: true } } }).app;
      const refused = await request(strictApp).post('/api/v1/workflows').set(auth).send({ ...valid, actions: [{ type: 'webhook', url: 'https://169.254.169.254/latest' }] });
      expect(expectProblem(refused, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/body/actions/0/url');
      // A trigger change is checked against the conditions the workflow keeps.
      const onMessages = await createWorkflow(t, { ...valid, trigger: { type: 'message.created' }, conditions: [{ field: 'message.content', operator: 'contains', value: 'x' }] });
      const retrigger = await request(app).patch(`/api/v1/workflows/${onMessages.id}`).set(auth).send({ trigger: { type: 'conversation.closed' } });
      expect(expectProblem(retrigger, 400, 'ERR_VALIDATION').errors).to.deep.equal([{ path: '/body/conditions/0/field', message: 'message fields need the message.created trigger' }]);
      // Only what changes is checked: a workflow whose department is gone can still be disabled.
      const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: `D ${newUuid()}` }).expect(201)).body;
      const transferring = await createWorkflow(t, { ...valid, actions: [{ type: 'transfer', department_id: dept.id }] });
      await request(app).delete(`/api/v1/departments/${dept.id}`).set(auth).expect(200);
      await request(app).patch(`/api/v1/workflows/${transferring.id}`).set(auth).send({ enabled: false }).expect(200);
      expectProblem(await request(app).patch(`/api/v1/workflows/${transferring.id}`).set(auth).send({ actions: [{ type: 'transfer', department_id: dept.id }] }), 422, 'ERR_INVALID_DEPARTMENT');
      const other = await tenant();
      const theirs = await createWorkflow(other, valid);
      expectProblem(await request(app).get(`/api/v1/workflows/${theirs.id}`).set(auth), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).patch(`/api/v1/workflows/${theirs.id}`).set(auth).send({ enabled: false }), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).delete(`/api/v1/workflows/${theirs.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    });
  });

  describe('triggers and actions', () => {
    it('conversation.created sets the priority; the change is a normal conversation.updated event carrying depth 1', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.created' }, actions: [{ type: 'set_priority', priority: 'urgent' }] });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      const [run] = await finishedRuns(t, wf.id);
      expect(run).to.deep.include({ status: 'succeeded', event_type: 'conversation.created', conversation_id: conv.id, depth: 1, skip_reason: null, attempts: 1 });
      expect(run!.actions).to.deep.equal([{ type: 'set_priority', status: 'succeeded', detail: null, attempts: 1, next_attempt_at: null }]);
      expect((await conversationOf(t, conv.id)).priority).to.equal('urgent');
      const events = await h.database.withTenant(t.tenantId, (trx) =>
        trx.selectFrom('events').select(['type', 'workflow_depth', 'data']).where('conversation_id', '=', conv.id).orderBy('position').execute(),
      );
      expect(events.map((e) => [e.type, e.workflow_depth])).to.deep.equal([
        ['conversation.created', 0],
        ['conversation.updated', 1],
      ]);
      expect(events[1]!.data).to.deep.include({ changed: ['priority'] });
    });

    it('message.created with conditions on the message: runs when they hold, is recorded as skipped when not', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, {
        trigger: { type: 'message.created' },
        conditions: [
          { field: 'message.content', operator: 'contains', value: 'REFUND' },
          { field: 'message.sender_type', operator: 'equals', value: 'user' },
        ],
        actions: [{ type: 'send_message', content: 'Refunds take 5 days.' }],
      });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await send(t, conv.id, 'hello');
      await finishedRuns(t, wf.id, 1);
      await send(t, conv.id, 'about my refund');
      // The third is the system message the second sent: not a member's.
      const runs = await finishedRuns(t, wf.id, 3);
      expect(runs.map((r) => [r.status, r.skip_reason])).to.deep.equal([
        ['skipped', 'conditions'],
        ['succeeded', null],
        ['skipped', 'conditions'],
      ]);
      expect(runs[0]!.actions[0]).to.include({ status: 'skipped', detail: 'the conditions did not hold' });
      // Conditions on the message alone are judged as the run is made: never claimed, never attempted.
      expect(runs.map((r) => r.attempts)).to.deep.equal([0, 1, 0]);
      const system = (await messagesOf(t, conv.id)).filter((m) => m.content === 'Refunds take 5 days.');
      expect(system).to.have.length(1);
      expect(system[0]).to.include({ sender_type: 'system', type: 'system', internal: false, sender_id: null });
    });

    it('conversation conditions and contact conditions read the state after the change, custom attributes included', async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: `D ${newUuid()}` }).expect(201)).body;
      const contact = (await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Ada', email: 'ada@example.com', custom_attributes: { plan: 'pro' } }).expect(201)).body;
      const conditions = [
        { field: 'conversation.status', operator: 'equals', value: 'closed' },
        { field: 'conversation.assigned', operator: 'equals', value: false },
        { field: 'conversation.priority', operator: 'in', value: ['high', 'urgent'] },
        { field: 'conversation.department_id', operator: 'equals', value: dept.id },
        { field: 'conversation.widget_id', operator: 'is_not_set' },
        { field: 'contact.email', operator: 'contains', value: '@EXAMPLE.com' },
        { field: 'contact.custom_attributes.plan', operator: 'equals', value: 'pro' },
        { field: 'contact.custom_attributes.seats', operator: 'is_not_set' },
      ];
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.closed' }, conditions, actions: [{ type: 'set_priority', priority: 'low' }] });
      const miss = await createWorkflow(t, {
        trigger: { type: 'conversation.closed' },
        conditions: [{ field: 'contact.custom_attributes.plan', operator: 'not_in', value: ['pro', 'business'] }],
        actions: [{ type: 'set_priority', priority: 'normal' }],
      });
      const conv = await createConversation(t, { contact_id: contact.id, priority: 'high', department_id: dept.id }, t.owner.accessToken, app);
      await close(t, conv.id);
      const [run] = await finishedRuns(t, wf.id);
      // The conversation was closed when the run read it, so set_priority had nothing to act on.
      expect(run).to.deep.include({ status: 'succeeded' });
      expect(run!.actions[0]).to.include({ status: 'skipped', detail: 'the conversation is closed' });
      expect((await finishedRuns(t, miss.id))[0]).to.include({ status: 'skipped', skip_reason: 'conditions' });
    });

    it('every operator, on each kind of field', () => {
      const conversation = { widget_id: null, department_id: 'd1', priority: 'high', status: 'open', assigned_user_id: 'usr_1' } as any;
      const contact = { email: 'Ada@Example.com', custom_attributes: { plan: 'pro', seats: 5 } } as any;
      const message = { content: 'I want a Refund', sender_type: 'visitor' } as any;
      const ctx = { conversation, contact, message };
      const holds = (field: string, operator: string, value?: unknown) => conditionHolds({ field, operator, value } as any, fieldValue(field, ctx));
      expect(holds('conversation.assigned', 'equals', true)).to.equal(true);
      expect(holds('conversation.assigned', 'not_equals', true)).to.equal(false);
      expect(holds('conversation.priority', 'in', ['urgent', 'high'])).to.equal(true);
      expect(holds('conversation.priority', 'not_in', ['urgent', 'high'])).to.equal(false);
      expect(holds('conversation.widget_id', 'is_set')).to.equal(false);
      expect(holds('conversation.department_id', 'is_set')).to.equal(true);
      expect(holds('conversation.status', 'equals', 'OPEN')).to.equal(true);
      expect(holds('contact.email', 'equals', 'ada@example.com')).to.equal(true);
      expect(holds('contact.custom_attributes.seats', 'equals', 5)).to.equal(true);
      expect(holds('contact.custom_attributes.seats', 'equals', '5')).to.equal(false);
      expect(holds('contact.custom_attributes.missing', 'is_not_set')).to.equal(true);
      expect(holds('message.content', 'contains', 'refund')).to.equal(true);
      expect(holds('message.content', 'not_contains', 'refund')).to.equal(false);
      expect(holds('message.sender_type', 'equals', 'visitor')).to.equal(true);
      // Without a contact, contact fields are unset.
      expect(conditionHolds({ field: 'contact.email', operator: 'is_set' } as any, fieldValue('contact.email', { ...ctx, contact: undefined }))).to.equal(false);
    });

    it('transfer picks in the department; close closes with a survey; skip_survey without one', async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const member = await addMember(t, { role: 'agent' });
      const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: `D ${newUuid()}`, member_ids: [member.userId] }).expect(201)).body;
      const transfer = await createWorkflow(t, {
        trigger: { type: 'message.created' },
        conditions: [{ field: 'message.content', operator: 'contains', value: 'billing' }],
        actions: [{ type: 'transfer', department_id: dept.id }],
      });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await send(t, conv.id, 'a billing question');
      const runs = await eventually(async () => {
        const all = await runsOf(t, transfer.id);
        return all.find((r) => r.status === 'succeeded');
      }, 'the transfer run');
      expect(runs.actions[0]).to.include({ status: 'succeeded', detail: `assigned to ${member.userId}` });
      expect(await conversationOf(t, conv.id)).to.include({ status: 'assigned', assigned_user_id: member.userId, department_id: dept.id });

      const closing = await createWorkflow(t, { trigger: { type: 'message.created' }, conditions: [{ field: 'message.content', operator: 'equals', value: 'bye' }], actions: [{ type: 'close' }] });
      const skipping = await createWorkflow(t, { trigger: { type: 'message.created' }, conditions: [{ field: 'message.content', operator: 'equals', value: 'ciao' }], actions: [{ type: 'skip_survey' }] });
      const a = await createConversation(t, {}, t.owner.accessToken, app);
      const b = await createConversation(t, {}, t.owner.accessToken, app);
      await send(t, a.id, 'bye');
      await send(t, b.id, 'ciao');
      await eventually(async () => (await runsOf(t, closing.id)).some((r) => r.status === 'succeeded' && r.conversation_id === a.id), 'the close run');
      await eventually(async () => (await runsOf(t, skipping.id)).some((r) => r.status === 'succeeded' && r.conversation_id === b.id), 'the skip_survey run');
      const surveys = async (id: string) => h.database.withTenant(t.tenantId, (trx) => trx.selectFrom('surveys').select('id').where('conversation_id', '=', id).execute());
      const closedEvent = async (id: string) =>
        (await h.database.withTenant(t.tenantId, (trx) => trx.selectFrom('events').select(['data', 'workflow_depth']).where('conversation_id', '=', id).where('type', '=', 'conversation.closed').executeTakeFirstOrThrow()));
      expect((await conversationOf(t, a.id)).status).to.equal('closed');
      expect((await conversationOf(t, b.id)).status).to.equal('closed');
      expect(await surveys(a.id)).to.have.length(1);
      expect(await surveys(b.id)).to.have.length(0);
      expect((await messagesOf(t, b.id)).map((m) => m.type)).to.not.include('survey');
      expect(await closedEvent(b.id)).to.deep.include({ workflow_depth: 1 });
      expect((await closedEvent(b.id)).data).to.include({ survey_id: null });
    });

    it('webhook posts the event, signed with the workflow secret the Standard Webhooks way', async () => {
      const t = await tenant();
      const r = await receiver();
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.created' }, actions: [{ type: 'webhook', url: r.url }] });
      r.secrets.push(wf.secret);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await r.until((got) => got.length === 1);
      const [delivery] = r.received;
      expect(delivery!.verified, delivery!.body).to.be.an('object');
      expect(delivery!.verified).to.deep.include({ type: 'conversation.created', tenant_id: t.tenantId });
      expect(delivery!.verified!.data.conversation_id).to.equal(conv.id);
      expect(delivery!.id).to.equal(delivery!.verified!.id);
      expect((await finishedRuns(t, wf.id))[0]!.status).to.equal('succeeded');
    });

    it('rotate-secret: the old secret signs beside the new for a day, then only the new', async () => {
      const t = await tenant();
      const r = await receiver();
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.created' }, actions: [{ type: 'webhook', url: r.url }] });
      const rotated = (await request(app).post(`/api/v1/workflows/${wf.id}/rotate-secret`).set(bearer(t.owner.accessToken)).expect(200)).body;
      expect(rotated.secret).to.match(/^whsec_/).and.not.equal(wf.secret);
      expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).to.be.closeTo(24 * 3_600_000, 60_000);
      r.secrets.push(wf.secret, rotated.secret);
      await createConversation(t, {}, t.owner.accessToken, app);
      await r.until((got) => got.length === 1);
      expect(r.received[0]!.verifiedBy).to.have.members([wf.secret, rotated.secret]);
      await h.database.asSystem((trx) => trx.updateTable('workflows').set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).where('id', '=', wf.id).execute());
      await createConversation(t, {}, t.owner.accessToken, app);
      await r.until((got) => got.length === 2);
      expect(r.received[1]!.verifiedBy).to.deep.equal([rotated.secret]);
      expectProblem(await request(app).post(`/api/v1/workflows/${wf.id}/rotate-secret`).set(bearer((await tenant()).owner.accessToken)), 404, 'ERR_NOT_FOUND');
    });

    it('a webhook action never reaches a loopback address unless allowed: a refusal fails the run at once', async () => {
      const strict = newRunner({ allowPrivate: false });
      extraRunners.push(strict);
      const t = await tenant();
      const r = await receiver();
      // Only the strict runner reads this tenant's event.
      await withoutSharedRunner(async () => {
        strict.start();
        const wf = await createWorkflow(t, { trigger: { type: 'conversation.created' }, actions: [{ type: 'webhook', url: r.url }, { type: 'close' }] });
        await createConversation(t, {}, t.owner.accessToken, app);
        const [run] = await finishedRuns(t, wf.id);
        expect(run).to.include({ status: 'failed', attempts: 1 });
        expect(run!.actions[0].status).to.equal('failed');
        expect(run!.actions[0].detail).to.match(/^refused: /);
        expect(run!.actions[1]).to.include({ status: 'skipped', detail: 'an earlier action failed' });
        expect(r.received).to.have.length(0);
        await strict.stop();
      });
    });

    it('send_transcript mails what the visitor saw, in HTML and text: no notes, no names, attachments listed', async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const contact = (await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Ada', email: `ada-${newUuid()}@example.com` }).expect(201)).body;
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.closed' }, actions: [{ type: 'send_transcript' }, { type: 'send_transcript', to: 'archive@example.com' }] });
      const conv = await createConversation(t, { contact_id: contact.id, subject: 'Order <42>' }, t.owner.accessToken, app);
      const file = (await request(app).post('/api/v1/files').set(auth).field('conversation_id', conv.id).attach('file', Buffer.from('hello there'), 'invoice.txt').expect(201)).body;
      await send(t, conv.id, 'Here is your invoice & receipt', { attachments: [file.id] });
      await send(t, conv.id, 'SECRET NOTE: this customer is difficult', { internal: true });
      await close(t, conv.id);
      await finishedRuns(t, wf.id);
      const mail = sentMail.find((m) => m.to === contact.email)!;
      expect(mail.subject).to.equal('Transcript: Order <42>');
      expect(mail.text).to.contain('Support: Here is your invoice & receipt');
      expect(mail.text).to.contain('Attachment: invoice.txt (11 B)');
      expect(mail.text).to.contain('-- This conversation has been closed.');
      expect(mail.html).to.contain('Here is your invoice &amp; receipt');
      expect(mail.html).to.contain('Transcript: Order &lt;42&gt;');
      expect(mail.html).to.contain('<li>Attachment: invoice.txt (11 B)</li>');
      for (const part of [mail.text, mail.html!]) {
        expect(part).to.not.contain('SECRET NOTE');
        expect(part).to.not.contain(t.owner.email);
        expect(part).to.not.contain('Owner');
      }
      expect(sentMail.filter((m) => m.to === 'archive@example.com' && m.subject === mail.subject)).to.have.length.greaterThan(0);
    });

    it('send_transcript without any address fails for good, not retried', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.closed' }, actions: [{ type: 'send_transcript' }] });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await close(t, conv.id);
      const [run] = await finishedRuns(t, wf.id);
      expect(run).to.include({ status: 'failed', attempts: 1 });
      expect(run!.actions[0].detail).to.match(/^no address/);
    });
  });

  describe('running', () => {
    it('a close answers before its workflows run, and they run after it committed', async () => {
      const t = await tenant();
      let conversationStatusSeen: Promise<string> | undefined;
      let calls = 0;
      // The first post hangs: the runner cuts it at its timeout and retries.
      const r = await receiver({
        behave: (d) => {
          calls++;
          if (calls === 1) {
            const id = JSON.parse(d.body).data.conversation_id as string;
            conversationStatusSeen = h.database.withTenant(t.tenantId, async (trx) => (await trx.selectFrom('conversations').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status);
            return 'hang';
          }
          return 'ok';
        },
      });
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.closed' }, actions: [{ type: 'webhook', url: r.url }] });
      r.secrets.push(wf.secret);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      const closed = await close(t, conv.id);
      expect(closed.body.conversation.status).to.equal('closed');
      // The run exists only after the close committed, and the close's answer did not wait for its action.
      const [pending] = await eventually(async () => {
        const runs = await runsOf(t, wf.id);
        return runs.length === 1 && runs;
      }, 'the run to be recorded');
      expect(pending!.status).to.equal('pending');
      await r.until((got) => got.some((d) => d.answered === 200));
      expect(await conversationStatusSeen).to.equal('closed');
      const [run] = await finishedRuns(t, wf.id);
      expect(run).to.include({ status: 'succeeded', attempts: 2 });
      expect(run!.actions[0]).to.include({ status: 'succeeded', attempts: 2 });
      expect(r.received[0]!.verified!.type).to.equal('conversation.closed');
    });

    it('a mail server refusing for a while (451) is retried until it accepts; a 550 fails at once', async () => {
      let refusals = 2;
      const smtp = await startSmtpServer({ refuse: () => (refusals-- > 0 ? 451 : undefined) });
      const mailer = createMailer({ smtpUrl: smtp.url, from: 'Chat <chat@example.test>', dataDir: '.', logger: quiet });
      // Retries far enough apart that the test sees the action waiting for its next attempt.
      const smtpRunner = newRunner({ mailer, retryDelaysMs: [400, 400] });
      const t = await tenant();
      await withoutSharedRunner(async () => {
        smtpRunner.start();
        const wf = await createWorkflow(t, { trigger: { type: 'conversation.closed' }, actions: [{ type: 'send_transcript', to: 'ada@example.com' }] });
        const conv = await createConversation(t, {}, t.owner.accessToken, app);
        await send(t, conv.id, 'Thanks for waiting');
        await close(t, conv.id);
        // While the server refuses, the action is retrying, with its reason and its next attempt.
        const retrying = await eventually(async () => (await runsOf(t, wf.id))[0]?.actions[0].status === 'retrying' && (await runsOf(t, wf.id))[0], 'a retrying action');
        expect(retrying.status).to.equal('pending');
        expect(retrying.actions[0].detail).to.match(/451/);
        expect(retrying.actions[0].next_attempt_at).to.be.a('string');
        const [run] = await finishedRuns(t, wf.id);
        expect(run).to.include({ status: 'succeeded', attempts: 3 });
        expect(smtp.refused).to.equal(2);
        const mail = await smtp.waitFor('ada@example.com', /Transcript/);
        expect(mail.text).to.contain('Support: Thanks for waiting');
        expect(mail.html).to.contain('Thanks for waiting');

        const never = await startSmtpServer({ refuse: () => 550 });
        const neverRunner = newRunner({ mailer: createMailer({ smtpUrl: never.url, from: 'Chat <chat@example.test>', dataDir: '.', logger: quiet }) });
        await smtpRunner.stop();
        neverRunner.start();
        try {
          const other = await createConversation(t, {}, t.owner.accessToken, app);
          await close(t, other.id);
          const failed = await eventually(async () => (await runsOf(t, wf.id)).find((x) => x.conversation_id === other.id && x.status === 'failed'), 'the refused run to fail');
          expect(failed).to.include({ attempts: 1 });
          expect(failed.actions[0].detail).to.match(/550/);
          expect(never.refused).to.equal(1);
        } finally {
          await neverRunner.stop();
          await never.close();
          await smtpRunner.stop();
          await smtp.close();
        }
      });
    });

    it('an event read twice, or by two runners at once, starts each workflow once', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, { trigger: { type: 'message.created' }, conditions: [{ field: 'message.sender_type', operator: 'equals', value: 'user' }], actions: [{ type: 'send_message', content: 'Noted.' }] });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await withoutSharedRunner(async () => {
        // Two instances read and run at once.
        const [one, two] = [newRunner(), newRunner()];
        extraRunners.push(one, two);
        await one.fanOutOnce();
        const before = await h.database.asSystem((trx) =>
          trx.selectFrom('feed_cursors').select([sql<string>`txid::text`.as('txid'), 'position']).where('name', '=', WORKFLOW_CURSOR).executeTakeFirstOrThrow(),
        );
        one.start();
        two.start();
        for (let i = 0; i < 5; i++) await send(t, conv.id, `m${i}`);
        await finishedRuns(t, wf.id, 10);
        await one.stop();
        await two.stop();
        // The cursor moved back: both read every event since again, at once.
        await h.database.asSystem((trx) => trx.updateTable('feed_cursors').set({ txid: before.txid, position: Number(before.position) }).where('name', '=', WORKFLOW_CURSOR).execute());
        const passes = await Promise.all([one.fanOutOnce(), two.fanOutOnce()]);
        expect(passes.reduce((n, p) => n + p.read, 0)).to.be.at.least(10);
        expect(passes.map((p) => p.inserted)).to.deep.equal([0, 0]);
      });
      const runs = await finishedRuns(t, wf.id, 10);
      expect(runs.filter((r) => r.status === 'succeeded')).to.have.length(5);
      expect(new Set(runs.map((r) => r.event_id)).size).to.equal(runs.length);
      expect((await messagesOf(t, conv.id)).filter((m) => m.content === 'Noted.')).to.have.length(5);
    });

    it('a chain of workflows stops at depth 3: the fourth run is recorded as skipped for depth', async () => {
      const t = await tenant();
      // Each system message it sends is a message.created that starts it again.
      const wf = await createWorkflow(t, { trigger: { type: 'message.created' }, actions: [{ type: 'send_message', content: 'echo' }] });
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await send(t, conv.id, 'start');
      const runs = await finishedRuns(t, wf.id, 4);
      expect(runs.map((r) => [r.depth, r.status, r.skip_reason])).to.deep.equal([
        [1, 'succeeded', null],
        [2, 'succeeded', null],
        [3, 'succeeded', null],
        [4, 'skipped', 'depth'],
      ]);
      expect(runs[3]!.actions[0]).to.include({ status: 'skipped', detail: 'the chain of workflows reached depth 3', attempts: 0 });
      expect((await messagesOf(t, conv.id)).filter((m) => m.content === 'echo')).to.have.length(3);
      const depths = await h.database.withTenant(t.tenantId, (trx) =>
        trx.selectFrom('events').select('workflow_depth').where('conversation_id', '=', conv.id).where('type', '=', 'message.created').orderBy('position').execute(),
      );
      expect(depths.map((d) => d.workflow_depth)).to.deep.equal([0, 1, 2, 3]);
    });

    it('a disabled workflow starts nothing; runs it had not started are skipped', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, { trigger: { type: 'conversation.created' }, actions: [{ type: 'close' }] });
      await withoutSharedRunner(async () => {
        const conv = await createConversation(t, {}, t.owner.accessToken, app);
        const paused = newRunner();
        await paused.fanOutOnce();
        await request(app).patch(`/api/v1/workflows/${wf.id}`).set(bearer(t.owner.accessToken)).send({ enabled: false }).expect(200);
        await createConversation(t, {}, t.owner.accessToken, app);
        paused.start();
        extraRunners.push(paused);
        const [run] = await finishedRuns(t, wf.id);
        expect(run).to.include({ status: 'skipped', skip_reason: 'disabled', conversation_id: conv.id });
        expect(run!.actions[0]).to.include({ status: 'skipped', detail: 'the workflow was disabled' });
        expect((await conversationOf(t, conv.id)).status).to.equal('open');
        await paused.stop();
        expect(await runsOf(t, wf.id)).to.have.length(1);
      });
    });
  });

  describe('conversation.idle', () => {
    const silence = (t: TestTenant, id: string, minutesAgo: number) =>
      h.database.withTenant(t.tenantId, (trx) =>
        trx.updateTable('conversations').set({ last_visitor_message_at: sql<Date>`now() - make_interval(secs => ${minutesAgo * 60})` }).where('id', '=', id).execute(),
      );
    /** No test waits for minutes to pass: the workflow was made a day ago, and silences are moved back. */
    const madeADayAgo = (id: string) =>
      h.database.asSystem((trx) => sql`update workflows set created_at = now() - interval '1 day' where id = ${id}`.execute(trx));
    const idleEvents = (t: TestTenant, id: string) =>
      h.database.withTenant(t.tenantId, (trx) => trx.selectFrom('events').select('data').where('conversation_id', '=', id).where('type', '=', 'conversation.idle').execute());
    const schedulerOn = () => new Scheduler({ database: h.database, logger: quiet, jobs: [idleJob({ bus, intervalMs: 60_000 })], tickMs: 3_600_000 });
    const makeDue = () => h.database.asSystem((trx) => trx.updateTable('scheduled_jobs').set({ next_run_at: sql<Date>`now()` }).where('name', '=', IDLE_JOB).execute());

    it('fires once per silence, across a restart and two instances, and again after the visitor writes', async () => {
      const t = await tenant();
      const wf = await createWorkflow(t, {
        trigger: { type: 'conversation.idle', minutes: 10 },
        conditions: [{ field: 'conversation.assigned', operator: 'equals', value: false }],
        actions: [{ type: 'send_message', content: 'Are you still there?' }],
      });
      await madeADayAgo(wf.id);
      const quiet10 = await createConversation(t, {}, t.owner.accessToken, app);
      const quiet5 = await createConversation(t, {}, t.owner.accessToken, app);
      await silence(t, quiet10.id, 11);
      await silence(t, quiet5.id, 5);
      // A silence that began long before the workflow existed is not this workflow's business.
      const ancient = await createConversation(t, {}, t.owner.accessToken, app);
      await silence(t, ancient.id, 60 * 24 * 2);

      // Two instances at once: the job's lease lets one of them run it.
      const [a, b] = [schedulerOn(), schedulerOn()];
      await makeDue();
      const ran = (await Promise.all([a.runDue(), b.runDue()])).flat().filter((r) => r.name === IDLE_JOB);
      expect(ran).to.have.length(1);
      expect(ran[0]).to.deep.include({ ok: true });
      const [run] = await finishedRuns(t, wf.id);
      expect(run).to.include({ status: 'succeeded', event_type: 'conversation.idle', conversation_id: quiet10.id });
      expect((await idleEvents(t, quiet10.id))[0]!.data).to.include({ conversation_id: quiet10.id, minutes: 10 });
      expect(await idleEvents(t, quiet5.id)).to.have.length(0);
      expect(await idleEvents(t, ancient.id)).to.have.length(0);

      // A restart: new schedulers on the same database. The next run keeps its persisted time...
      await a.stop();
      await b.stop();
      const restarted = schedulerOn();
      expect((await restarted.runDue()).filter((r) => r.name === IDLE_JOB)).to.deep.equal([]);
      // ...and when it comes, the silence that already fired does not fire again.
      await makeDue();
      expect((await restarted.runDue()).filter((r) => r.name === IDLE_JOB)).to.have.length(1);
      expect(await idleEvents(t, quiet10.id)).to.have.length(1);

      // Silences that passed ten minutes while it was down fire at its next run; so does a new one after the visitor wrote.
      await silence(t, quiet5.id, 12);
      await silence(t, quiet10.id, 10.5);
      await makeDue();
      await restarted.runDue();
      await restarted.stop();
      expect(await idleEvents(t, quiet5.id)).to.have.length(1);
      expect(await idleEvents(t, quiet10.id)).to.have.length(2);
      const runs = await finishedRuns(t, wf.id, 3);
      expect(runs.every((r) => r.status === 'succeeded')).to.equal(true);
      expect((await messagesOf(t, quiet10.id)).filter((m) => m.content === 'Are you still there?')).to.have.length(2);
    });

    it("a visitor's message starts the silence anew, a member's does not; widget conditions read the visitor's widget", async () => {
      const t = await tenant();
      const auth = bearer(t.owner.accessToken);
      const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Site' }).expect(201)).body;
      await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
      const wf = await createWorkflow(t, {
        trigger: { type: 'message.created' },
        conditions: [
          { field: 'conversation.widget_id', operator: 'equals', value: widget.id },
          { field: 'message.sender_type', operator: 'equals', value: 'visitor' },
        ],
        actions: [{ type: 'set_priority', priority: 'high' }],
      });
      const origin = 'https://shop.example';
      const started = await request(app).post('/api/v1/widget/sessions').set('Origin', origin).send({ widget_id: widget.id, page_url: `${origin}/` }).expect(201);
      const asVisitor = { Authorization: `Bearer ${started.body.visitor_token}`, Origin: origin };
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor).send({ content: 'Hello?' }).expect(201)).body;
      const visitorAt = async () =>
        (await h.database.withTenant(t.tenantId, (trx) => trx.selectFrom('conversations').select('last_visitor_message_at').where('id', '=', conv.id).executeTakeFirstOrThrow()))
          .last_visitor_message_at;
      const first = await visitorAt();
      const [hello] = await messagesOf(t, conv.id);
      expect(first?.getTime()).to.equal(hello!.created_at.getTime());
      await send(t, conv.id, 'Hi, how can I help?');
      expect((await visitorAt())?.getTime()).to.equal(first!.getTime());
      await request(app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor).send({ content: 'About shipping' }).expect(201);
      expect((await visitorAt())!.getTime()).to.be.greaterThan(first!.getTime());
      const runs = await finishedRuns(t, wf.id, 3);
      expect(runs.map((r) => r.status)).to.deep.equal(['succeeded', 'skipped', 'succeeded']);
      expect((await conversationOf(t, conv.id)).priority).to.equal('high');
    });

    it('a closed conversation is never idle', async () => {
      const t = await tenant();
      await madeADayAgo((await createWorkflow(t, { trigger: { type: 'conversation.idle', minutes: 1 }, actions: [{ type: 'close' }] })).id);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await silence(t, conv.id, 3);
      await close(t, conv.id);
      const scheduler = schedulerOn();
      await makeDue();
      await scheduler.runDue();
      await scheduler.stop();
      expect(await idleEvents(t, conv.id)).to.have.length(0);
    });
  });
});
