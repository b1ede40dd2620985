import { expect } from 'chai';
import request from 'supertest';
import { addMember, createConversation, createTenant, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('contacts', () => {
  it('create, get, update (custom attributes merge; null removes), delete', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const created = await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Grace', email: 'grace@example.com', custom_attributes: { plan: 'pro', seats: 5 } }).expect(201);
    expect(created.body).to.include({ name: 'Grace', email: 'grace@example.com', phone: null, company: null });
    const id = created.body.id;
    await request(app).get(`/api/v1/contacts/${id}`).set(auth).expect(200);
    const patched = await request(app).patch(`/api/v1/contacts/${id}`).set(auth).send({ company: 'Navy', custom_attributes: { plan: null, vip: true } }).expect(200);
    expect(patched.body).to.include({ company: 'Navy', name: 'Grace' });
    expect(patched.body.custom_attributes).to.deep.equal({ seats: 5, vip: true });
    const cleared = await request(app).patch(`/api/v1/contacts/${id}`).set(auth).send({ company: null }).expect(200);
    expect(cleared.body.company).to.equal(null);
    await request(app).delete(`/api/v1/contacts/${id}`).set(auth).expect(200, { id, deleted: true });
    expectProblem(await request(app).get(`/api/v1/contacts/${id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('e-mail addresses are unique per tenant, whatever the case (409)', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    await request(app).post('/api/v1/contacts').set(bearer(t.owner.accessToken)).send({ email: 'dup@example.com' }).expect(201);
    expectProblem(await request(app).post('/api/v1/contacts').set(bearer(t.owner.accessToken)).send({ email: 'DUP@example.com' }), 409, 'ERR_CONFLICT');
    const second = await request(app).post('/api/v1/contacts').set(bearer(t.owner.accessToken)).send({ email: 'other@example.com' }).expect(201);
    expectProblem(await request(app).patch(`/api/v1/contacts/${second.body.id}`).set(bearer(t.owner.accessToken)).send({ email: 'dup@example.com' }), 409, 'ERR_CONFLICT');
    await request(app).post('/api/v1/contacts').set(bearer(other.owner.accessToken)).send({ email: 'dup@example.com' }).expect(201);
  });

  it('q searches name, e-mail, phone and company; cursor pages cover everything once', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Ada', company: 'Engines Ltd' }).expect(201);
    await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Bob', phone: '+44 20 7946 0000' }).expect(201);
    for (let i = 0; i < 5; i++) await request(app).post('/api/v1/contacts').set(auth).send({ email: `c${i}@example.com` }).expect(201);
    const q = async (s: string) => (await request(app).get(`/api/v1/contacts?q=${encodeURIComponent(s)}`).set(auth).expect(200)).body.data.map((c: { name: string | null }) => c.name);
    expect(await q('engines')).to.deep.equal(['Ada']);
    expect(await q('7946')).to.deep.equal(['Bob']);
    expect(await q('100%')).to.deep.equal([]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await request(app).get(`/api/v1/contacts?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set(auth).expect(200);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
      expect(res.body.pagination.total).to.equal(7);
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).to.equal(7);
  });

  it('a deleted contact leaves its conversations, without it', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const contact = (await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Temp' })).body;
    const c = await createConversation(t, { contact_id: contact.id });
    await request(app).delete(`/api/v1/contacts/${contact.id}`).set(auth).expect(200);
    const after = await request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200);
    expect(after.body.contact_id).to.equal(null);
  });

  it('another tenant\'s contact is not found, for every operation; lite seats only read', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const lite = await addMember(a, { seat: 'lite' });
    const contact = (await request(app).post('/api/v1/contacts').set(bearer(b.owner.accessToken)).send({ name: 'Secret' })).body;
    const auth = bearer(a.owner.accessToken);
    expectProblem(await request(app).get(`/api/v1/contacts/${contact.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).patch(`/api/v1/contacts/${contact.id}`).set(auth).send({ name: 'x' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`/api/v1/contacts/${contact.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    expect((await request(app).get('/api/v1/contacts').set(auth).expect(200)).body.data).to.deep.equal([]);
    const liteToken = await login(lite.email);
    await request(app).get('/api/v1/contacts').set(bearer(liteToken)).expect(200);
    expectProblem(await request(app).post('/api/v1/contacts').set(bearer(liteToken)).send({ name: 'x' }), 403, 'ERR_LITE_SEAT');
  });
});

describe('canned responses', () => {
  it('create, list by shortcut, search, update, delete', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const ship = await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'shipping', title: 'Shipping times', content: 'Two days.' }).expect(201);
    expect(ship.body).to.include({ shortcut: 'shipping', created_by: t.owner.userId });
    await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'refund', title: 'Refund policy', content: '30 days.' }).expect(201);
    const list = await request(app).get('/api/v1/canned-responses').set(auth).expect(200);
    expect(list.body.data.map((c: { shortcut: string }) => c.shortcut)).to.deep.equal(['refund', 'shipping']);
    const byPrefix = await request(app).get('/api/v1/canned-responses?q=ship').set(auth).expect(200);
    expect(byPrefix.body.data.map((c: { shortcut: string }) => c.shortcut)).to.deep.equal(['shipping']);
    const byTitle = await request(app).get('/api/v1/canned-responses?q=policy').set(auth).expect(200);
    expect(byTitle.body.data.map((c: { shortcut: string }) => c.shortcut)).to.deep.equal(['refund']);
    const updated = await request(app).patch(`/api/v1/canned-responses/${ship.body.id}`).set(auth).send({ content: 'One day.' }).expect(200);
    expect(updated.body.content).to.equal('One day.');
    await request(app).delete(`/api/v1/canned-responses/${ship.body.id}`).set(auth).expect(200, { id: ship.body.id, deleted: true });
    expectProblem(await request(app).delete(`/api/v1/canned-responses/${ship.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('shortcuts follow ^[a-z0-9_-]{1,32}$ and are unique per tenant', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    for (const shortcut of ['Hello', 'with space', 'x'.repeat(33), '']) {
      expectProblem(await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut, title: 't', content: 'c' }), 400, 'ERR_VALIDATION');
    }
    await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'hi', title: 't', content: 'c' }).expect(201);
    expectProblem(await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'hi', title: 't2', content: 'c2' }), 409, 'ERR_CONFLICT');
    const other = await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'bye', title: 't', content: 'c' }).expect(201);
    expectProblem(await request(app).patch(`/api/v1/canned-responses/${other.body.id}`).set(auth).send({ shortcut: 'hi' }), 409, 'ERR_CONFLICT');
  });

  it('another tenant\'s canned response is not found', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const cr = (await request(app).post('/api/v1/canned-responses').set(bearer(b.owner.accessToken)).send({ shortcut: 'x', title: 't', content: 'c' })).body;
    expectProblem(await request(app).patch(`/api/v1/canned-responses/${cr.id}`).set(bearer(a.owner.accessToken)).send({ title: 'mine' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`/api/v1/canned-responses/${cr.id}`).set(bearer(a.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    expect((await request(app).get('/api/v1/canned-responses').set(bearer(a.owner.accessToken))).body.data).to.deep.equal([]);
  });
});
