import { expect } from 'chai';
import request from 'supertest';
import { appendMessage } from '../../src/conversations/message.service.ts';
import { EventBus } from '../../src/events/bus.ts';
import { inTenantTransaction } from '../../src/events/outbox.ts';
import { SnoozeService } from '../../src/snooze/snooze.service.ts';
import { type TestTenant, addMember, createConversation, createTenant, eventsOf, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A message as the visitor writes it (the widget's path: appendMessage in its own transaction). */
async function visitorSays(t: TestTenant, conversationId: string, content: string) {
  const { database } = await getHarness();
  await inTenantTransaction(database, new EventBus(), t.tenantId, (trx, emit) =>
    appendMessage(trx, emit, { id: conversationId, tenant_id: t.tenantId }, { sender_type: 'visitor', sender_id: null, type: 'text', content }, new Date()),
  );
}

async function say(t: TestTenant, conversationId: string, content: string, internal = false) {
  const { app } = await getHarness();
  await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conversationId, content, internal }).expect(201);
}

describe('labels', function () {
  this.timeout(60_000);

  it('CRUD: names unique whatever the case (409), colours as #rrggbb, a list by name; another tenant sees none of it (404)', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const vip = await request(app).post('/api/v1/labels').set(auth).send({ name: 'vip', color: '#FF7F0E', description: 'Enterprise' }).expect(201);
    expect(vip.body).to.include({ name: 'vip', color: '#ff7f0e', description: 'Enterprise' });
    expect(vip.body.id).to.match(/^lbl_/);
    await request(app).post('/api/v1/labels').set(auth).send({ name: 'Billing', color: '#1f77b4' }).expect(201);
    expectProblem(await request(app).post('/api/v1/labels').set(auth).send({ name: 'VIP', color: '#000000' }), 409, 'ERR_CONFLICT');
    const bad = expectProblem(await request(app).post('/api/v1/labels').set(auth).send({ name: 'x', color: 'red' }), 400, 'ERR_VALIDATION');
    expect(bad.errors.map((e: { path: string }) => e.path)).to.include('/body/color');
    const list = await request(app).get('/api/v1/labels').set(auth).expect(200);
    expect(list.body.data.map((l: { name: string }) => l.name)).to.deep.equal(['Billing', 'vip']);
    const patched = await request(app).patch(`/api/v1/labels/${vip.body.id}`).set(auth).send({ name: 'VIP customers' }).expect(200);
    expect(patched.body.name).to.equal('VIP customers');
    const other = await createTenant();
    expectProblem(await request(app).patch(`/api/v1/labels/${vip.body.id}`).set(bearer(other.owner.accessToken)).send({ color: '#000000' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`/api/v1/labels/${vip.body.id}`).set(bearer(other.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    expect((await request(app).get('/api/v1/labels').set(bearer(other.owner.accessToken)).expect(200)).body.data).to.deep.equal([]);
    await request(app).delete(`/api/v1/labels/${vip.body.id}`).set(auth).expect(200, { id: vip.body.id, deleted: true });
    expectProblem(await request(app).delete(`/api/v1/labels/${vip.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('agents may not manage labels (403) but put them on conversations', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    const token = await login(agent.email, t.tenantId);
    expectProblem(await request(app).post('/api/v1/labels').set(bearer(token)).send({ name: 'x', color: '#000000' }), 403, 'ERR_FORBIDDEN');
    const label = (await request(app).post('/api/v1/labels').set(bearer(t.owner.accessToken)).send({ name: 'bug', color: '#d62728' }).expect(201)).body;
    const c = await createConversation(t);
    const res = await request(app).post(`/api/v1/conversations/${c.id}/labels/${label.id}`).set(bearer(token)).expect(200);
    expect(res.body.conversation.labels).to.deep.equal([{ id: label.id, name: 'bug', color: '#d62728' }]);
  });

  it('at most 50 per tenant (409)', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    for (let i = 0; i < 50; i++) await request(app).post('/api/v1/labels').set(auth).send({ name: `l${i}`, color: '#000000' }).expect(201);
    const body = expectProblem(await request(app).post('/api/v1/labels').set(auth).send({ name: 'one more', color: '#000000' }), 409, 'ERR_CONFLICT');
    expect(body.detail).to.match(/at most 50/);
  });

  it('on and off conversations, once each (events, no event when nothing changes), the list filter, deleted labels come off; other tenants get 404', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const billing = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'billing', color: '#1f77b4' }).expect(201)).body;
    const bug = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'bug', color: '#d62728' }).expect(201)).body;
    const a = await createConversation(t);
    const b = await createConversation(t);
    await request(app).post(`/api/v1/conversations/${a.id}/labels/${billing.id}`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${a.id}/labels/${billing.id}`).set(auth).expect(200);
    const both = await request(app).post(`/api/v1/conversations/${a.id}/labels/${bug.id}`).set(auth).expect(200);
    expect(both.body.conversation.labels.map((l: { name: string }) => l.name)).to.deep.equal(['billing', 'bug']);
    await request(app).post(`/api/v1/conversations/${b.id}/labels/${bug.id}`).set(auth).expect(200);
    const listed = async (q: string) => (await request(app).get(`/api/v1/conversations?${q}`).set(auth).expect(200)).body;
    const withBilling = await listed(`label=${billing.id}`);
    expect(withBilling.data.map((c: { id: string }) => c.id)).to.deep.equal([a.id]);
    expect(withBilling.pagination.total).to.equal(1);
    expect((await listed(`label=${bug.id}`)).data).to.have.length(2);
    expect((await request(app).get(`/api/v1/conversations/${b.id}`).set(auth).expect(200)).body.labels).to.deep.equal([{ id: bug.id, name: 'bug', color: '#d62728' }]);
    await request(app).delete(`/api/v1/conversations/${a.id}/labels/${billing.id}`).set(auth).expect(200, { id: billing.id, deleted: true });
    await request(app).delete(`/api/v1/conversations/${a.id}/labels/${billing.id}`).set(auth).expect(200);
    const types = (await eventsOf(t, a.id)).map((e) => e.type).filter((x) => x.startsWith('conversation.label'));
    expect(types).to.deep.equal(['conversation.label_added', 'conversation.label_added', 'conversation.label_removed']);
    await request(app).delete(`/api/v1/labels/${bug.id}`).set(auth).expect(200);
    expect((await request(app).get(`/api/v1/conversations/${b.id}`).set(auth).expect(200)).body.labels).to.deep.equal([]);
    const other = await createTenant();
    expectProblem(await request(app).post(`/api/v1/conversations/${a.id}/labels/${billing.id}`).set(bearer(other.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    const theirs = await createConversation(other);
    expectProblem(await request(app).post(`/api/v1/conversations/${theirs.id}/labels/${billing.id}`).set(bearer(other.owner.accessToken)), 404, 'ERR_NOT_FOUND');
  });
});

describe('snooze', function () {
  this.timeout(60_000);

  it('until a time: hidden by snoozed=false, shown by snoozed=true, back with conversation.unsnoozed when the job finds it due', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const c = await createConversation(t);
    const awake = await createConversation(t);
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const res = await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until }).expect(200);
    expect(res.body.conversation).to.include({ snoozed_until: until, snooze_until_reply: false, status: 'open' });
    const ids = async (q: string) => (await request(app).get(`/api/v1/conversations?${q}`).set(auth).expect(200)).body.data.map((x: { id: string }) => x.id);
    expect(await ids('snoozed=false')).to.deep.equal([awake.id]);
    expect(await ids('snoozed=true')).to.deep.equal([c.id]);
    expect(await ids('')).to.have.members([c.id, awake.id]);
    // An hour later, as the job sees it.
    const later = new SnoozeService({ database, bus: new EventBus(), view: async () => ({}) as never, now: () => new Date(Date.now() + 3_600_001) });
    expect(await later.wakeDue()).to.be.at.least(1);
    expect(await later.wakeDue()).to.equal(0);
    expect((await request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200)).body).to.include({ snoozed_until: null, snooze_until_reply: false });
    const events = (await eventsOf(t, c.id)).filter((e) => e.type.includes('snoozed'));
    expect(events.map((e) => [e.type, (e.data as { reason?: string }).reason ?? null, e.internal])).to.deep.equal([
      ['conversation.snoozed', null, true],
      ['conversation.unsnoozed', 'time', true],
    ]);
  });

  it('until the visitor writes: their message ends it (reason reply); a member may end it; a closed conversation is 409; bad input 400', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const c = await createConversation(t);
    await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until_reply: true }).expect(200);
    await say(t, c.id, 'an answer from us does not end it');
    expect((await request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200)).body.snooze_until_reply).to.equal(true);
    await visitorSays(t, c.id, 'hello again');
    expect((await request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200)).body.snooze_until_reply).to.equal(false);
    expect((await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.unsnoozed').map((e) => (e.data as { reason: string }).reason)).to.deep.equal(['reply']);

    await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until_reply: true, until: new Date(Date.now() + 60_000).toISOString() }).expect(200);
    const back = await request(app).post(`/api/v1/conversations/${c.id}/unsnooze`).set(auth).expect(200);
    expect(back.body.conversation).to.include({ snoozed_until: null, snooze_until_reply: false });
    await request(app).post(`/api/v1/conversations/${c.id}/unsnooze`).set(auth).expect(200);
    expect((await eventsOf(t, c.id)).filter((e) => e.type === 'conversation.unsnoozed').map((e) => (e.data as { reason: string }).reason)).to.deep.equal(['reply', 'member']);

    const past = expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until: new Date(Date.now() - 1000).toISOString() }), 400, 'ERR_VALIDATION');
    expect(JSON.stringify(past.errors)).to.contain('until');
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until_reply: false }), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({}), 400, 'ERR_VALIDATION');

    await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until_reply: true }).expect(200);
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(auth).expect(200);
    expect((await request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200)).body.snooze_until_reply, 'a close ends the snooze').to.equal(false);
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(auth).send({ until_reply: true }), 409, 'ERR_CONVERSATION_CLOSED');
    const other = await createTenant();
    expectProblem(await request(app).post(`/api/v1/conversations/${c.id}/snooze`).set(bearer(other.owner.accessToken)).send({ until_reply: true }), 404, 'ERR_NOT_FOUND');
  });
});

describe('search', function () {
  this.timeout(60_000);

  it('finds words of any language in messages, best first with a highlighted, escaped snippet; parts of words too', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const order = await createConversation(t);
    await visitorSays(t, order.id, 'Where is my order <48213> & when');
    const german = await createConversation(t);
    await visitorSays(t, german.id, 'Meine Bestellung über 3 Artikel ist nicht angekommen');
    const greek = await createConversation(t);
    await visitorSays(t, greek.id, 'Η παραγγελία μου δεν έφτασε');
    const q = async (text: string) => (await request(app).get(`/api/v1/search/conversations?q=${encodeURIComponent(text)}`).set(auth).expect(200)).body;
    const found = await q('order');
    expect(found.data.map((r: { conversation: { id: string } }) => r.conversation.id)).to.deep.equal([order.id]);
    expect(found.data[0]).to.include({ matched_in: found.data[0].matched_in, message_id: found.data[0].message_id });
    expect(found.data[0].matched_in).to.deep.equal(['message']);
    expect(found.data[0].snippet).to.contain('<b>order</b>').and.contain('&#60;48213&#62; &#38;').and.not.contain('<48213>');
    expect((await q('über')).data.map((r: { conversation: { id: string } }) => r.conversation.id)).to.deep.equal([german.id]);
    expect((await q('παραγγελία')).data.map((r: { conversation: { id: string } }) => r.conversation.id)).to.deep.equal([greek.id]);
    expect((await q('8213')).data.map((r: { conversation: { id: string } }) => r.conversation.id), 'inside a word (trigrams)').to.deep.equal([order.id]);
    expect((await q('Bestell')).data.map((r: { conversation: { id: string } }) => r.conversation.id), 'a word begun').to.deep.equal([german.id]);
    expect((await q('nothing-like-this')).data).to.deep.equal([]);
  });

  it('matches contacts (name, e-mail, attributes) and labels; filters by status and label; ranks more matches higher', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const contact = (await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Grace Hopper', email: 'grace@navy.example', custom_attributes: { plan: 'cobol-enterprise' } }).expect(201)).body;
    const withContact = await createConversation(t, { contact_id: contact.id });
    const labelled = await createConversation(t);
    const label = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'refund', color: '#2ca02c' }).expect(201)).body;
    await request(app).post(`/api/v1/conversations/${labelled.id}/labels/${label.id}`).set(auth).expect(200);
    const both = await createConversation(t);
    await visitorSays(t, both.id, 'I want a refund please');
    await request(app).post(`/api/v1/conversations/${both.id}/labels/${label.id}`).set(auth).expect(200);
    const q = async (text: string, extra = '') => (await request(app).get(`/api/v1/search/conversations?q=${encodeURIComponent(text)}${extra}`).set(auth).expect(200)).body;
    for (const text of ['grace', 'navy.example', 'cobol']) {
      const r = await q(text);
      expect(r.data.map((x: { conversation: { id: string } }) => x.conversation.id), text).to.deep.equal([withContact.id]);
      expect(r.data[0]).to.deep.include({ matched_in: ['contact'], snippet: null, message_id: null });
    }
    const refunds = await q('refund');
    expect(refunds.data.map((x: { conversation: { id: string } }) => x.conversation.id)).to.deep.equal([both.id, labelled.id]);
    expect(refunds.data[0].matched_in).to.deep.equal(['label', 'message']);
    expect(refunds.pagination.total).to.equal(2);
    await request(app).post(`/api/v1/conversations/${both.id}/close`).set(auth).expect(200);
    expect((await q('refund', '&status=open')).data.map((x: { conversation: { id: string } }) => x.conversation.id)).to.deep.equal([labelled.id]);
    expect((await q('refund', `&label=${label.id}&limit=1`)).pagination).to.include({ total: 2, has_more: true });
  });

  it('never another tenant\'s conversation; internal notes for members, never for a bot\'s key', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    const mine = await createConversation(t);
    await say(t, mine.id, 'secret zebra-plan for the team', true);
    const theirs = await createConversation(other);
    await say(other, theirs.id, 'zebra in another tenant');
    const q = async (headers: Record<string, string>, text: string) => (await request(app).get(`/api/v1/search/conversations?q=${encodeURIComponent(text)}`).set(headers).expect(200)).body;
    const member = await q(bearer(t.owner.accessToken), 'zebra');
    expect(member.data.map((x: { conversation: { id: string } }) => x.conversation.id)).to.deep.equal([mine.id]);
    expect(member.data[0].snippet).to.contain('<b>zebra</b>');
    const bot = (await request(app).post('/api/v1/bots').set(bearer(t.owner.accessToken)).send({ name: 'helper', kind: 'faq' }).expect(201)).body;
    await database.withTenant(t.tenantId, (trx) => trx.updateTable('conversations').set({ bot_id: bot.id, bot_state: 'active' }).where('id', '=', mine.id).execute());
    const asBot = { 'X-API-Key': bot.api_key, 'X-Tenant-ID': t.tenantId };
    expect((await q(asBot, 'zebra')).data, 'a bot sees no internal note').to.deep.equal([]);
    await visitorSays(t, mine.id, 'a zebra crossing');
    const seen = await q(asBot, 'zebra');
    expect(seen.data.map((x: { conversation: { id: string } }) => x.conversation.id)).to.deep.equal([mine.id]);
    expect(seen.data[0].snippet).to.contain('crossing').and.not.contain('secret');
  });

  it('400 naming q: over 200 characters, or nothing but stop characters', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    for (const text of ['x'.repeat(201), '!!! ??? ...', '   ']) {
      const body = expectProblem(await request(app).get(`/api/v1/search/conversations?q=${encodeURIComponent(text)}`).set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
      expect(JSON.stringify(body.errors), text).to.contain('q');
    }
    expectProblem(await request(app).get('/api/v1/search/conversations').set(bearer(t.owner.accessToken)), 400, 'ERR_VALIDATION');
  });
});
