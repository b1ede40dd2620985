import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { hashOpaqueToken } from '../../src/auth/tokens.ts';
import { addMember, createTenant, PASSWORD } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

async function refresh(refreshToken: string) {
  const { app } = await getHarness();
  return request(app).post('/api/v1/auth/refresh').send({ refresh_token: refreshToken });
}

async function setTokenTimes(token: string, times: { rotated_at?: Date; expires_at?: Date }) {
  const { database } = await getHarness();
  await database.asSystem((trx) => trx.updateTable('refresh_tokens').set(times).where('token_hash', '=', hashOpaqueToken(token)).execute());
}

describe('refresh tokens', () => {
  it('a refresh answers the login shape with a new refresh token, for the same login', async () => {
    const t = await createTenant();
    const res = await refresh(t.owner.refreshToken);
    expect(res.status).to.equal(200);
    expect(Object.keys(res.body).sort()).to.deep.equal(['access_token', 'expires_in', 'refresh_token', 'token_type']);
    expect(res.body.refresh_token).not.to.equal(t.owner.refreshToken);
    const before = jwt.decode(t.owner.accessToken) as jwt.JwtPayload;
    const after = jwt.decode(res.body.access_token) as jwt.JwtPayload;
    expect(after).to.include({ sub: before.sub, tid: before.tid, sid: before.sid });
  });

  it('is single use: the old token is refused and the new one works', async () => {
    const t = await createTenant();
    const first = await refresh(t.owner.refreshToken);
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
    expect((await refresh(first.body.refresh_token)).status).to.equal(200);
  });

  it('of two concurrent refreshes with one token exactly one succeeds, and the login survives', async () => {
    const t = await createTenant();
    const results = await Promise.all([refresh(t.owner.refreshToken), refresh(t.owner.refreshToken)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([200, 401]);
    const winner = results.find((r) => r.status === 200)!;
    expectProblem(results.find((r) => r.status === 401)!, 401, 'ERR_INVALID_REFRESH_TOKEN');
    // The loser's retry within the window does not end the login of the winner.
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
    expect((await refresh(winner.body.refresh_token)).status).to.equal(200);
  });

  it('a rotated token presented again after the 10 s window revokes the whole login', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const next = await refresh(t.owner.refreshToken);
    await setTokenTimes(t.owner.refreshToken, { rotated_at: new Date(Date.now() - 11_000) });
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
    // The thief's and the owner's newer tokens are all dead, and so are the login's access tokens.
    expectProblem(await refresh(next.body.refresh_token), 401, 'ERR_INVALID_REFRESH_TOKEN');
    const res = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('Authorization', `Bearer ${next.body.access_token}`);
    expectProblem(res, 401, 'ERR_UNAUTHENTICATED');
  });

  it('within the window a reuse is only refused (two tabs racing keep the login)', async () => {
    const t = await createTenant();
    const next = await refresh(t.owner.refreshToken);
    await setTokenTimes(t.owner.refreshToken, { rotated_at: new Date(Date.now() - 9_000) });
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
    expect((await refresh(next.body.refresh_token)).status).to.equal(200);
  });

  it('an expired refresh token is refused', async () => {
    const t = await createTenant();
    await setTokenTimes(t.owner.refreshToken, { expires_at: new Date(Date.now() - 1000) });
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
  });

  it('an unknown or malformed refresh token is refused', async () => {
    expectProblem(await refresh('not-a-token-we-issued'), 401, 'ERR_INVALID_REFRESH_TOKEN');
    const { app } = await getHarness();
    expectProblem(await request(app).post('/api/v1/auth/refresh').send({ refresh_token: '' }), 400, 'ERR_VALIDATION');
  });

  it('refresh tokens are stored hashed, never as issued', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const rows = await database.asSystem((trx) => trx.selectFrom('refresh_tokens').select('token_hash').where('user_id', '=', t.owner.userId).execute());
    expect(rows).to.have.length(1);
    expect(Buffer.from(rows[0]!.token_hash).equals(hashOpaqueToken(t.owner.refreshToken))).to.equal(true);
    expect(Buffer.from(rows[0]!.token_hash).toString('utf8')).not.to.contain(t.owner.refreshToken);
  });

  it('logout ends the login at once: refresh and access tokens both stop working', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).post('/api/v1/auth/logout').send({ refresh_token: t.owner.refreshToken }).expect(200);
    expect(res.body).to.deep.equal({ logged_out: true });
    expectProblem(await refresh(t.owner.refreshToken), 401, 'ERR_INVALID_REFRESH_TOKEN');
    const get = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('Authorization', `Bearer ${t.owner.accessToken}`);
    expectProblem(get, 401, 'ERR_UNAUTHENTICATED');
  });

  it('logout leaves the user\'s other logins alone, and answers 200 for an unknown token', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: PASSWORD }).expect(200);
    await request(app).post('/api/v1/auth/logout').send({ refresh_token: t.owner.refreshToken }).expect(200);
    expect((await refresh(other.body.refresh_token)).status).to.equal(200);
    await request(app).post('/api/v1/auth/logout').send({ refresh_token: 'unknown' }).expect(200);
  });

  it('a member removed from the tenant can no longer refresh into it', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const member = await addMember(t);
    const login = await request(app).post('/api/v1/auth/login').send({ email: member.email, password: PASSWORD }).expect(200);
    await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${member.userId}`).set('Authorization', `Bearer ${t.owner.accessToken}`).expect(200);
    expectProblem(await refresh(login.body.refresh_token), 401, 'ERR_INVALID_REFRESH_TOKEN');
    const get = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('Authorization', `Bearer ${login.body.access_token}`);
    expect(get.status).to.be.oneOf([401, 403]);
  });
});
