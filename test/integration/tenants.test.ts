import { expect } from 'chai';
import request from 'supertest';
import { newId } from '../../src/shared/ids.ts';
import { addMember, createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

describe('tenants', () => {
  it('GET /v1/tenants/{id} answers the caller\'s tenant', async () => {
    const { app } = await getHarness();
    const t = await createTenant({ name: 'Acme', timezone: 'Europe/Paris' });
    const res = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('Authorization', `Bearer ${t.owner.accessToken}`).expect(200);
    expect(res.body).to.include({ id: t.tenantId, name: 'Acme', timezone: 'Europe/Paris' });
    expect(res.body.settings).to.deep.equal({});
  });

  it('another tenant\'s id answers exactly as an id that does not exist: 404', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const other = await request(app).get(`/api/v1/tenants/${b.tenantId}`).set('Authorization', `Bearer ${a.owner.accessToken}`);
    const missing = await request(app).get(`/api/v1/tenants/${newId('tenant')}`).set('Authorization', `Bearer ${a.owner.accessToken}`);
    const x = expectProblem(other, 404, 'ERR_NOT_FOUND');
    const y = expectProblem(missing, 404, 'ERR_NOT_FOUND');
    expect(x.detail).to.equal(y.detail);
    const otherMembers = await request(app).get(`/api/v1/tenants/${b.tenantId}/members`).set('Authorization', `Bearer ${a.owner.accessToken}`);
    expectProblem(otherMembers, 404, 'ERR_NOT_FOUND');
  });

  it('lists members oldest first with the pagination object; default limit 20', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const added = [];
    for (let i = 0; i < 3; i++) added.push(await addMember(t, { role: 'agent', seat: i === 2 ? 'lite' : 'full' }));
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    const all = await request(app).get(`/api/v1/tenants/${t.tenantId}/members`).set(auth).expect(200);
    expect(all.body.pagination).to.deep.equal({ total: 4, limit: 20, offset: 0, has_more: false, next_cursor: null });
    expect(all.body.data.map((m: { user_id: string }) => m.user_id)).to.deep.equal([t.owner.userId, ...added.map((a) => a.userId)]);
    expect(all.body.data[0]).to.include({ role: 'owner', seat: 'full', status: 'active', email: t.owner.email });
    expect(all.body.data[3]).to.include({ role: 'agent', seat: 'lite' });
    const page = await request(app).get(`/api/v1/tenants/${t.tenantId}/members?limit=2&offset=1`).set(auth).expect(200);
    expect(page.body.pagination).to.deep.equal({ total: 4, limit: 2, offset: 1, has_more: true, next_cursor: null });
    expect(page.body.data.map((m: { user_id: string }) => m.user_id)).to.deep.equal(added.slice(0, 2).map((a) => a.userId));
  });
});
