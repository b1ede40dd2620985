import { expect } from 'chai';
import request from 'supertest';
import { addMember, createTenant, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function createKey(token: string, scopes: string[], name = 'Integration') {
  const { app } = await getHarness();
  return (await request(app).post('/api/v1/api-keys').set(bearer(token)).send({ name, scopes }).expect(201)).body;
}

describe('API keys', () => {
  it('a new key is shown once; the list shows its prefix, never its value', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant();
    const key = await createKey(t.owner.accessToken, ['tenant:read']);
    expect(key.key).to.match(/^chat_[\w-]{43}$/);
    expect(key.key.startsWith(key.prefix)).to.equal(true);
    const list = await request(app).get('/api/v1/api-keys').set(bearer(t.owner.accessToken)).expect(200);
    expect(list.body.data).to.have.length(1);
    expect(list.body.data[0]).to.include({ id: key.id, prefix: key.prefix }).and.not.have.property('key');
    expect(JSON.stringify(list.body)).not.to.contain(key.key);
    const stored = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('api_keys').selectAll().executeTakeFirstOrThrow());
    expect(JSON.stringify(stored)).not.to.contain(key.key.slice(13));
  });

  it('a key with X-Tenant-ID reaches what its scopes allow, and records when it was used', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const key = await createKey(t.owner.accessToken, ['tenant:read']);
    const res = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId).expect(200);
    expect(res.body.id).to.equal(t.tenantId);
    const listed = await request(app).get('/api/v1/api-keys').set(bearer(t.owner.accessToken)).expect(200);
    expect(listed.body.data[0].last_used_at).to.be.a('string');
    // team:read is not among its scopes.
    const members = await request(app).get(`/api/v1/tenants/${t.tenantId}/members`).set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId);
    expect(expectProblem(members, 403, 'ERR_FORBIDDEN').detail).to.contain('team:read');
  });

  it('tenant A\'s key with tenant B in X-Tenant-ID is refused without revealing B', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const key = await createKey(a.owner.accessToken, ['tenant:read']);
    const res = await request(app).get(`/api/v1/tenants/${b.tenantId}`).set('X-API-Key', key.key).set('X-Tenant-ID', b.tenantId);
    expectProblem(res, 403, 'ERR_FORBIDDEN');
    expect(res.text).not.to.contain(b.tenantId);
    // Its own tenant in the header but B in the path: not found, like any id outside the tenant.
    const path = await request(app).get(`/api/v1/tenants/${b.tenantId}`).set('X-API-Key', key.key).set('X-Tenant-ID', a.tenantId);
    expectProblem(path, 404, 'ERR_NOT_FOUND');
  });

  it('an API key on an operation that needs a user is 403 ERR_USER_TOKEN_REQUIRED', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const key = await createKey(t.owner.accessToken, ['tenant:read', 'tenant:write', 'team:read']);
    const res = await request(app).get('/api/v1/api-keys').set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId);
    expectProblem(res, 403, 'ERR_USER_TOKEN_REQUIRED');
  });

  it('a revoked key stops working at once', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const key = await createKey(t.owner.accessToken, ['tenant:read']);
    await request(app).delete(`/api/v1/api-keys/${key.id}`).set(bearer(t.owner.accessToken)).expect(200, { id: key.id, deleted: true });
    expectProblem(await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId), 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(app).delete(`/api/v1/api-keys/${key.id}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    const list = await request(app).get('/api/v1/api-keys').set(bearer(t.owner.accessToken)).expect(200);
    expect(list.body.data).to.deep.equal([]);
  });

  it('rotation gives the key a new value and retires the old one', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const key = await createKey(t.owner.accessToken, ['tenant:read']);
    const rotated = await request(app).post(`/api/v1/api-keys/${key.id}/rotate`).set(bearer(t.owner.accessToken)).expect(200);
    expect(rotated.body).to.include({ id: key.id, name: key.name });
    expect(rotated.body.key).not.to.equal(key.key);
    expect(rotated.body.rotated_at).to.be.a('string');
    expectProblem(await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId), 401, 'ERR_UNAUTHENTICATED');
    await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('X-API-Key', rotated.body.key).set('X-Tenant-ID', t.tenantId).expect(200);
  });

  it('only owners and admins manage keys; another tenant\'s key is not found', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    const agent = await addMember(t);
    const token = await login(agent.email);
    expectProblem(await request(app).post('/api/v1/api-keys').set(bearer(token)).send({ name: 'x', scopes: ['tenant:read'] }), 403, 'ERR_FORBIDDEN');
    const foreign = await createKey(other.owner.accessToken, ['tenant:read']);
    expectProblem(await request(app).delete(`/api/v1/api-keys/${foreign.id}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).post(`/api/v1/api-keys/${foreign.id}/rotate`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
  });

  it('unknown scopes and empty scope lists are refused', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    expectProblem(await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'x', scopes: ['root'] }), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'x', scopes: [] }), 400, 'ERR_VALIDATION');
  });
});
