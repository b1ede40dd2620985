import { expect } from 'chai';
import { sql } from 'kysely';
import request from 'supertest';
import { addMember, createTenant, login, uniqueEmail } from '../support/factories.ts';
import { eventually } from '../support/eventually.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('tenants: create and update', () => {
  it('POST /v1/tenants makes the caller owner of a new tenant they can select with X-Tenant-ID', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const created = await request(app).post('/api/v1/tenants').set(bearer(t.owner.accessToken)).send({ name: 'Second', timezone: 'Asia/Kolkata' }).expect(201);
    expect(created.body).to.include({ name: 'Second', timezone: 'Asia/Kolkata' });
    const members = await request(app).get(`/api/v1/tenants/${created.body.id}/members`).set(bearer(t.owner.accessToken)).set('X-Tenant-ID', created.body.id).expect(200);
    expect(members.body.data).to.have.length(1);
    expect(members.body.data[0]).to.include({ user_id: t.owner.userId, role: 'owner', status: 'active' });
  });

  it('PATCH /v1/tenants/{id} changes name and timezone and merges settings (null removes a key)', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const path = `/api/v1/tenants/${t.tenantId}`;
    await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ settings: { greeting: 'Hi', colour: '#123456' } }).expect(200);
    const res = await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ name: 'Renamed', timezone: 'Europe/Oslo', settings: { colour: null, hours: '9-17' } }).expect(200);
    expect(res.body).to.include({ name: 'Renamed', timezone: 'Europe/Oslo' });
    expect(res.body.settings).to.deep.equal({ greeting: 'Hi', hours: '9-17' });
    expect(Date.parse(res.body.updated_at)).to.be.greaterThan(Date.parse(res.body.created_at) - 1);
  });

  it('PATCH refuses an unknown time zone, an empty body and unknown fields', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const path = `/api/v1/tenants/${t.tenantId}`;
    expectProblem(await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ timezone: 'Nowhere/Atlantis' }), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).patch(path).set(bearer(t.owner.accessToken)).send({}), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ plan: 'free' }), 400, 'ERR_VALIDATION');
  });

  it('agents cannot change the tenant (403); another tenant\'s id is 404', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    const agent = await addMember(t, { role: 'agent' });
    const token = await login(agent.email);
    expectProblem(await request(app).patch(`/api/v1/tenants/${t.tenantId}`).set(bearer(token)).send({ name: 'x' }), 403, 'ERR_FORBIDDEN');
    expectProblem(await request(app).patch(`/api/v1/tenants/${other.tenantId}`).set(bearer(t.owner.accessToken)).send({ name: 'x' }), 404, 'ERR_NOT_FOUND');
  });
});

describe('members', () => {
  it('adding someone already a member is 409; an admin cannot add an owner', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const admin = await addMember(t, { role: 'admin' });
    const adminToken = await login(admin.email);
    const path = `/api/v1/tenants/${t.tenantId}/members`;
    expectProblem(await request(app).post(path).set(bearer(t.owner.accessToken)).send({ email: admin.email, role: 'agent' }), 409, 'ERR_CONFLICT');
    expectProblem(await request(app).post(path).set(bearer(adminToken)).send({ email: uniqueEmail(), role: 'owner' }), 403, 'ERR_FORBIDDEN');
    await request(app).post(path).set(bearer(adminToken)).send({ email: uniqueEmail(), role: 'agent', seat: 'lite' }).expect(201);
  });

  it('PATCH changes role and seat', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    const res = await request(app).patch(`/api/v1/tenants/${t.tenantId}/members/${agent.userId}`).set(bearer(t.owner.accessToken)).send({ role: 'admin', seat: 'lite' }).expect(200);
    expect(res.body).to.include({ user_id: agent.userId, role: 'admin', seat: 'lite' });
  });

  it('the last owner can be neither demoted nor removed; with a second owner, one can go', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const path = `/api/v1/tenants/${t.tenantId}/members/${t.owner.userId}`;
    expectProblem(await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ role: 'admin' }), 409, 'ERR_CONFLICT');
    expectProblem(await request(app).delete(path).set(bearer(t.owner.accessToken)), 409, 'ERR_CONFLICT');
    const second = await addMember(t, { role: 'owner' });
    await request(app).patch(path).set(bearer(t.owner.accessToken)).send({ role: 'admin' }).expect(200);
    const secondToken = await login(second.email);
    expectProblem(await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${second.userId}`).set(bearer(secondToken)), 409, 'ERR_CONFLICT');
  });

  it('two owners demoting each other at once leave exactly one owner', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant();
    const second = await addMember(t, { role: 'owner' });
    const secondToken = await login(second.email);
    const results = await Promise.all([
      request(app).patch(`/api/v1/tenants/${t.tenantId}/members/${second.userId}`).set(bearer(t.owner.accessToken)).send({ role: 'agent' }),
      request(app).patch(`/api/v1/tenants/${t.tenantId}/members/${t.owner.userId}`).set(bearer(secondToken)).send({ role: 'agent' }),
    ]);
    // Truly concurrent (PostgreSQL), the loser finds one owner left: 409. Serialised (PGlite), the loser
    // has already been demoted by the time it is checked: 403. Either way one owner remains.
    const [winner, loser] = results.map((r) => r.status).sort();
    expect(winner).to.equal(200);
    expect(loser).to.be.oneOf([403, 409]);
    const owners = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('memberships').select('user_id').where('role', '=', 'owner').execute());
    expect(owners).to.have.length(1);
  });

  it('an admin cannot touch an owner', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const admin = await addMember(t, { role: 'admin' });
    const token = await login(admin.email);
    const path = `/api/v1/tenants/${t.tenantId}/members/${t.owner.userId}`;
    expectProblem(await request(app).patch(path).set(bearer(token)).send({ seat: 'lite' }), 403, 'ERR_FORBIDDEN');
    expectProblem(await request(app).delete(path).set(bearer(token)), 403, 'ERR_FORBIDDEN');
  });

  it('a removed member loses access at once and leaves the tenant\'s departments', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    const token = await login(agent.email);
    const dept = await request(app).post('/api/v1/departments').set(bearer(t.owner.accessToken)).send({ name: 'Support', member_ids: [agent.userId] }).expect(201);
    const removed = await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${agent.userId}`).set(bearer(t.owner.accessToken)).expect(200);
    expect(removed.body).to.deep.equal({ id: agent.userId, deleted: true });
    const denied = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set(bearer(token));
    expect(denied.status).to.be.oneOf([401, 403]);
    const after = await request(app).get(`/api/v1/departments/${dept.body.id}`).set(bearer(t.owner.accessToken)).expect(200);
    expect(after.body.member_ids).to.deep.equal([]);
    expectProblem(await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${agent.userId}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
  });

  it('members of another tenant are not found', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const bMember = await addMember(b);
    expectProblem(await request(app).patch(`/api/v1/tenants/${a.tenantId}/members/${bMember.userId}`).set(bearer(a.owner.accessToken)).send({ seat: 'lite' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`/api/v1/tenants/${a.tenantId}/members/${bMember.userId}`).set(bearer(a.owner.accessToken)), 404, 'ERR_NOT_FOUND');
  });
});

describe('departments', () => {
  it('create, get, list, rename, delete', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const created = await request(app).post('/api/v1/departments').set(auth).send({ name: 'Sales', description: 'New business' }).expect(201);
    expect(created.body).to.include({ name: 'Sales', description: 'New business' });
    expect(created.body.id).to.match(/^[0-9a-f-]{36}$/);
    await request(app).post('/api/v1/departments').set(auth).send({ name: 'Billing' }).expect(201);
    const list = await request(app).get('/api/v1/departments').set(auth).expect(200);
    expect(list.body.data.map((d: { name: string }) => d.name)).to.deep.equal(['Billing', 'Sales']);
    expect(list.body.pagination.total).to.equal(2);
    const renamed = await request(app).patch(`/api/v1/departments/${created.body.id}`).set(auth).send({ name: 'Sales EMEA' }).expect(200);
    expect(renamed.body.name).to.equal('Sales EMEA');
    await request(app).delete(`/api/v1/departments/${created.body.id}`).set(auth).expect(200, { id: created.body.id, deleted: true });
    expectProblem(await request(app).get(`/api/v1/departments/${created.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('names are unique per tenant whatever the letter case (409), but free across tenants', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    await request(app).post('/api/v1/departments').set(bearer(a.owner.accessToken)).send({ name: 'Support' }).expect(201);
    expectProblem(await request(app).post('/api/v1/departments').set(bearer(a.owner.accessToken)).send({ name: 'SUPPORT' }), 409, 'ERR_CONFLICT');
    await request(app).post('/api/v1/departments').set(bearer(b.owner.accessToken)).send({ name: 'Support' }).expect(201);
  });

  it('members must be active members of the tenant (422 ERR_USER_NOT_IN_TENANT); adding is idempotent', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    const agent = await addMember(t);
    const invited = await addMember(t, { status: 'invited' });
    const auth = bearer(t.owner.accessToken);
    expectProblem(await request(app).post('/api/v1/departments').set(auth).send({ name: 'X', member_ids: [other.owner.userId] }), 422, 'ERR_USER_NOT_IN_TENANT');
    const d = await request(app).post('/api/v1/departments').set(auth).send({ name: 'Y' }).expect(201);
    const path = `/api/v1/departments/${d.body.id}/members`;
    expectProblem(await request(app).put(`${path}/${invited.userId}`).set(auth), 422, 'ERR_USER_NOT_IN_TENANT');
    expectProblem(await request(app).put(`${path}/${other.owner.userId}`).set(auth), 422, 'ERR_USER_NOT_IN_TENANT');
    await request(app).put(`${path}/${agent.userId}`).set(auth).expect(200);
    const again = await request(app).put(`${path}/${agent.userId}`).set(auth).expect(200);
    expect(again.body.member_ids).to.deep.equal([agent.userId]);
    const removed = await request(app).delete(`${path}/${agent.userId}`).set(auth).expect(200);
    expect(removed.body.member_ids).to.deep.equal([]);
  });

  it('a member removed while a department naming them is made: 422 ERR_USER_NOT_IN_TENANT, not a broken foreign key', async function () {
    const h = await getHarness();
    // Two transactions at once: the embedded database runs one at a time, so the race needs PostgreSQL.
    if (h.database.kind !== 'postgres') this.skip();
    const t = await createTenant();
    const agent = await addMember(t, { role: 'agent' });
    let commitRemoval: (() => void) | undefined;
    let removed!: () => void;
    const removedOnce = new Promise<void>((resolve) => (removed = resolve));
    const removal = h.database.withTenant(t.tenantId, async (trx) => {
      await sql`delete from memberships where user_id = ${agent.userId}`.execute(trx);
      await new Promise<void>((resolve) => {
        commitRemoval = resolve;
        removed();
      });
    });
    try {
      await removedOnce;
      const creating = request(h.app).post('/api/v1/departments').set(bearer(t.owner.accessToken)).send({ name: 'Race', member_ids: [agent.userId] }).then((res) => res);
      // The sentinel: a transaction waits on another's (the request's, on the removal's, whether at its
      // check or at its insert). Nothing else runs meanwhile: the tests run one at a time.
      await eventually(
        async () =>
          Number((await h.database.asSystem((trx) => sql<{ n: string }>`select count(*) as n from pg_locks where not granted and locktype = 'transactionid'`.execute(trx))).rows[0]!.n) > 0,
        'the request to wait on the removal',
        { everyMs: 0 },
      );
      commitRemoval!();
      await removal;
      expectProblem(await creating, 422, 'ERR_USER_NOT_IN_TENANT');
    } finally {
      commitRemoval?.();
      await removal.catch(() => undefined);
    }
  });

  it('another tenant\'s department is not found, for every operation', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const d = await request(app).post('/api/v1/departments').set(bearer(b.owner.accessToken)).send({ name: 'Secret' }).expect(201);
    const auth = bearer(a.owner.accessToken);
    const path = `/api/v1/departments/${d.body.id}`;
    expectProblem(await request(app).get(path).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).patch(path).set(auth).send({ name: 'Mine' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(path).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).put(`${path}/members/${a.owner.userId}`).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`${path}/members/${a.owner.userId}`).set(auth), 404, 'ERR_NOT_FOUND');
    const list = await request(app).get('/api/v1/departments').set(auth).expect(200);
    expect(list.body.data).to.deep.equal([]);
    await request(app).get(path).set(bearer(b.owner.accessToken)).expect(200);
  });
});
