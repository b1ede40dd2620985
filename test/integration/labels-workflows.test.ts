import { expect } from 'chai';
import type { Express } from 'express';
import request from 'supertest';
import { eventually } from '../support/eventually.ts';
import { type TestTenant, createConversation, createTenant, eventsOf } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { type WorkflowApp, startWorkflowApp } from '../support/workflow-app.ts';

// Labels inside running workflows (issue 44): the condition conversation.labels (contains, not_contains,
// is_set, is_not_set) and the actions add_label and remove_label, run by a real WorkflowRunner on the
// app's bus, with their events and the label's report rollups moved in the action's transaction.

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const today = () => new Date().toISOString().slice(0, 10);

describe('labels in workflows', function () {
  this.timeout(60_000);
  let app: Express;
  let started: WorkflowApp;
  const tenants: TestTenant[] = [];

  before(async () => {
    started = await startWorkflowApp();
    app = started.app;
  });

  after(() => started.stop(tenants.map((t) => t.tenantId)));

  async function tenant() {
    const t = await createTenant({ timezone: 'UTC' });
    tenants.push(t);
    const label = (await request(app).post('/api/v1/labels').set(bearer(t.owner.accessToken)).send({ name: 'vip', color: '#aa0000' }).expect(201)).body as { id: string };
    return { t, auth: bearer(t.owner.accessToken), labelId: label.id };
  }

  const workflow = async (auth: Record<string, string>, body: Record<string, unknown>) => (await request(app).post('/api/v1/workflows').set(auth).send({ name: 'W', ...body }).expect(201)).body as { id: string };

  /** The runs of a workflow once `count` have finished, oldest first. */
  const finished = (auth: Record<string, string>, id: string, count = 1) =>
    eventually(async () => {
      const runs = (await request(app).get(`/api/v1/workflows/${id}/runs?limit=100`).set(auth).expect(200)).body.data as Record<string, any>[];
      return runs.length >= count && runs.every((r) => r.status !== 'pending') && runs.reverse();
    }, `${count} finished run(s)`);

  const labelsOf = async (auth: Record<string, string>, id: string) => ((await request(app).get(`/api/v1/conversations/${id}`).set(auth).expect(200)).body.labels as { id: string }[]).map((l) => l.id);

  it('add_label on a message that matches, remove_label on close when the conversation carries it; events, and the label report follows', async () => {
    const { t, auth, labelId } = await tenant();
    const tag = await workflow(auth, {
      trigger: { type: 'message.created' },
      conditions: [
        { field: 'message.content', operator: 'contains', value: 'refund' },
        { field: 'conversation.labels', operator: 'not_contains', value: labelId },
      ],
      actions: [{ type: 'add_label', label_id: labelId }],
    });
    const untag = await workflow(auth, {
      trigger: { type: 'conversation.closed' },
      conditions: [{ field: 'conversation.labels', operator: 'contains', value: labelId }],
      actions: [{ type: 'remove_label', label_id: labelId }],
    });
    const c = await createConversation(t);
    const other = await createConversation(t);
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'your refund is on its way' }).expect(201);
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: other.id, content: 'hello' }).expect(201);
    const tagged = await finished(auth, tag.id, 2);
    expect(tagged.map((r) => r.status).sort()).to.deep.equal(['skipped', 'succeeded']);
    expect(tagged.find((r) => r.status === 'succeeded')!.conversation_id).to.equal(c.id);
    expect(await labelsOf(auth, c.id)).to.deep.equal([labelId]);
    expect(await labelsOf(auth, other.id)).to.deep.equal([]);
    const added = (await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.label_added');
    expect(added.map((e) => (e.data as { label: { id: string } }).label.id)).to.deep.equal([labelId]);

    // The label's report counts the conversation now that it carries the label (rollups moved with it).
    const labelReport = async () => (await request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}&label_id=${labelId}`).set(auth).expect(200)).body;
    expect((await labelReport()).conversations).to.equal(1);

    // A second matching message: the condition not_contains now fails, so nothing runs twice.
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'refund again' }).expect(201);
    expect((await finished(auth, tag.id, 3)).filter((r) => r.status === 'succeeded')).to.have.length(1);

    // Closing: only the labelled conversation's run acts; the label comes off with its event.
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${other.id}/close`).set(auth).expect(200);
    const untagged = await finished(auth, untag.id, 2);
    expect(untagged.map((r) => [r.conversation_id, r.status]).sort()).to.deep.equal([[c.id, 'succeeded'], [other.id, 'skipped']].sort());
    expect(untagged.find((r) => r.status === 'succeeded')!.actions).to.deep.equal([{ type: 'remove_label', status: 'succeeded', detail: null, attempts: 1, next_attempt_at: null }]);
    expect(await labelsOf(auth, c.id)).to.deep.equal([]);
    expect((await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.label_removed')).to.have.length(1);
    expect((await labelReport()).conversations, 'off the label, out of its report').to.equal(0);
  });

  it('is_set and is_not_set: any label or none; an action with nothing to change is skipped, a label deleted since fails the run', async () => {
    const { t, auth, labelId } = await tenant();
    const second = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'later', color: '#00aa00' }).expect(201)).body as { id: string };
    const any = await workflow(auth, {
      trigger: { type: 'conversation.closed' },
      conditions: [{ field: 'conversation.labels', operator: 'is_set' }],
      actions: [{ type: 'add_label', label_id: labelId }],
    });
    const none = await workflow(auth, {
      trigger: { type: 'conversation.closed' },
      conditions: [{ field: 'conversation.labels', operator: 'is_not_set' }],
      actions: [{ type: 'add_label', label_id: second.id }],
    });
    const labelled = await createConversation(t);
    const bare = await createConversation(t);
    await request(app).post(`/api/v1/conversations/${labelled.id}/labels/${labelId}`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${labelled.id}/close`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${bare.id}/close`).set(auth).expect(200);
    const anyRuns = await finished(auth, any.id, 2);
    const noneRuns = await finished(auth, none.id, 2);
    // is_set held for the labelled one, whose add_label had nothing to do (it carried the label already).
    const anyLabelled = anyRuns.find((r) => r.conversation_id === labelled.id)!;
    expect(anyLabelled.actions[0]).to.include({ type: 'add_label', status: 'skipped', detail: 'the conversation carried the label already' });
    expect(anyRuns.find((r) => r.conversation_id === bare.id)!.status).to.equal('skipped');
    // is_not_set held for the bare one only.
    expect(noneRuns.find((r) => r.conversation_id === bare.id)!.status).to.equal('succeeded');
    expect(noneRuns.find((r) => r.conversation_id === labelled.id)!.status).to.equal('skipped');
    expect(await labelsOf(auth, bare.id)).to.deep.equal([second.id]);

    // A label deleted after the workflow was made: the action fails (404 inside the run), nothing changes.
    const gone = await workflow(auth, { trigger: { type: 'conversation.created' }, actions: [{ type: 'add_label', label_id: second.id }] });
    await request(app).delete(`/api/v1/labels/${second.id}`).set(auth).expect(200);
    const fresh = await createConversation(t);
    const [run] = await finished(auth, gone.id, 1);
    expect(run!.status).to.equal('failed');
    expect(await labelsOf(auth, fresh.id)).to.deep.equal([]);
  });

  it('400 naming the field: conversation.labels with an operator other than contains, not_contains, is_set or is_not_set; add_label without a label', async () => {
    const { auth, labelId } = await tenant();
    const bad = async (body: Record<string, unknown>) =>
      expectProblem(await request(app).post('/api/v1/workflows').set(auth).send({ name: 'W', trigger: { type: 'conversation.closed' }, actions: [{ type: 'close' }], ...body }), 400, 'ERR_VALIDATION').errors;
    const equals = await bad({ conditions: [{ field: 'conversation.labels', operator: 'equals', value: labelId }] });
    expect(JSON.stringify(equals)).to.contain('operator');
    const missing = await bad({ actions: [{ type: 'add_label' }] });
    expect(JSON.stringify(missing)).to.contain('actions');
  });
});
