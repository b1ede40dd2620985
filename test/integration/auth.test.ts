import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { TokenService } from '../../src/auth/tokens.ts';
import { PASSWORD, addMember, createTenant, login, uniqueEmail } from '../support/factories.ts';
import { TEST_JWT_SECRET, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

describe('register and login', () => {
  it('register creates the user and a tenant they own, and answers the login shape plus both', async () => {
    const { app, database } = await getHarness();
    const email = uniqueEmail();
    const res = await request(app)
      .post('/api/v1/auth/register')
      .send({ email, password: PASSWORD, name: 'Grace', tenant_name: 'Compilers Inc', timezone: 'America/New_York' })
      .expect(201);
    expect(res.body).to.include({ token_type: 'Bearer', expires_in: 900 });
    expect(res.body.user).to.include({ email, name: 'Grace', email_verified: false });
    expect(res.body.tenant).to.include({ name: 'Compilers Inc', timezone: 'America/New_York' });
    const membership = await database.withTenant(res.body.tenant.id, (trx) =>
      trx.selectFrom('memberships').selectAll().where('user_id', '=', res.body.user.id).executeTakeFirstOrThrow(),
    );
    expect(membership).to.include({ role: 'owner', seat: 'full', status: 'active' });
  });

  it('register refuses an e-mail address already registered, in any letter case, with ERR_CONFLICT', async () => {
    const { app } = await getHarness();
    const email = uniqueEmail();
    await request(app).post('/api/v1/auth/register').send({ email, password: PASSWORD, name: 'A' }).expect(201);
    const res = await request(app).post('/api/v1/auth/register').send({ email: email.toUpperCase(), password: PASSWORD, name: 'B' });
    expect(expectProblem(res, 409, 'ERR_CONFLICT').detail).to.contain('e-mail');
  });

  it('register refuses a time zone that is not in the IANA list', async () => {
    const { app } = await getHarness();
    const res = await request(app)
      .post('/api/v1/auth/register')
      .send({ email: uniqueEmail(), password: PASSWORD, name: 'A', timezone: 'Mars/Olympus_Mons' });
    expect(expectProblem(res, 400, 'ERR_VALIDATION').errors).to.deep.equal([
      { path: '/body/timezone', message: 'must be an IANA time zone name' },
    ]);
  });

  it('login answers exactly {access_token, refresh_token, token_type, expires_in}', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: PASSWORD }).expect(200);
    expect(Object.keys(res.body).sort()).to.deep.equal(['access_token', 'expires_in', 'refresh_token', 'token_type']);
    expect(res.body).to.include({ token_type: 'Bearer', expires_in: 900 });
    const claims = jwt.verify(res.body.access_token, TEST_JWT_SECRET) as jwt.JwtPayload;
    expect(claims).to.include({ sub: t.owner.userId, tid: t.tenantId });
    expect(claims.exp! - claims.iat!).to.equal(900);
  });

  it('login refuses a wrong password and an unknown e-mail alike', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const wrong = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: 'not the password' });
    const unknown = await request(app).post('/api/v1/auth/login').send({ email: uniqueEmail(), password: PASSWORD });
    const a = expectProblem(wrong, 401, 'ERR_UNAUTHENTICATED');
    const b = expectProblem(unknown, 401, 'ERR_UNAUTHENTICATED');
    expect(a.detail).to.equal(b.detail);
  });

  it('login with tenant_id issues the token for that tenant, and refuses a tenant the user is not in', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const token = await login(a.owner.email, a.tenantId);
    expect((jwt.decode(token) as jwt.JwtPayload).tid).to.equal(a.tenantId);
    const res = await request(app).post('/api/v1/auth/login').send({ email: a.owner.email, password: PASSWORD, tenant_id: b.tenantId });
    expectProblem(res, 403, 'ERR_FORBIDDEN');
  });
});

describe('authentication of protected operations', () => {
  const tenantPath = (id: string) => `/api/v1/tenants/${id}`;

  it('no credential: 401 ERR_UNAUTHENTICATED with WWW-Authenticate', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).get(tenantPath(t.tenantId));
    expectProblem(res, 401, 'ERR_UNAUTHENTICATED');
    expect(res.headers['www-authenticate']).to.equal('Bearer');
  });

  it('authentication comes before request validation (401 for a malformed id without a token)', async () => {
    const { app } = await getHarness();
    expectProblem(await request(app).get(tenantPath('tn_bad')), 401, 'ERR_UNAUTHENTICATED');
  });

  it('an access token past its exp: 401 ERR_TOKEN_EXPIRED, even by one second', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const sessionId = (jwt.decode(t.owner.accessToken) as jwt.JwtPayload).sid as string;
    const claims = { userId: t.owner.userId, tenantId: t.tenantId, sessionId };
    const issuedAt = Date.now() - 901_000;
    const expired = new TokenService(TEST_JWT_SECRET, () => issuedAt).signAccessToken(claims);
    expectProblem(await request(app).get(tenantPath(t.tenantId)).set('Authorization', `Bearer ${expired}`), 401, 'ERR_TOKEN_EXPIRED');
    // Still valid: a few seconds left (iat is rounded down to the second).
    const fresh = new TokenService(TEST_JWT_SECRET, () => Date.now() - 895_000).signAccessToken(claims);
    await request(app).get(tenantPath(t.tenantId)).set('Authorization', `Bearer ${fresh}`).expect(200);
  });

  it('a token verified once is refused once it expires, and a token altered after it is verified in full', () => {
    let now = Date.now();
    const tokens = new TokenService(TEST_JWT_SECRET, () => now);
    const claims = { userId: `usr_${randomUUID()}`, tenantId: `tn_${randomUUID()}`, sessionId: `ses_${randomUUID()}` };
    const token = tokens.signAccessToken(claims);
    expect(tokens.verifyAccessToken(token)).to.deep.equal(claims);
    expect(tokens.verifyAccessToken(token), 'again, as remembered').to.deep.equal(claims);
    // The same header and claims under another signature: not the remembered token.
    const [head, body] = token.split('.');
    const resigned = `${head}.${body}.${Buffer.alloc(32, 7).toString('base64url')}`;
    expect(() => tokens.verifyAccessToken(resigned)).to.throw().with.property('code', 'ERR_UNAUTHENTICATED');
    now += 899_000;
    expect(tokens.verifyAccessToken(token), 'a second before its end').to.deep.equal(claims);
    now += 1_000;
    expect(() => tokens.verifyAccessToken(token)).to.throw().with.property('code', 'ERR_TOKEN_EXPIRED');
    expect(() => tokens.verifyAccessToken(token), 'and stays expired').to.throw().with.property('code', 'ERR_TOKEN_EXPIRED');
  });

  it('forged tokens are refused: alg none, another secret, another audience, garbage', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const payload = { sub: t.owner.userId, tid: t.tenantId, sid: 'ses_x' };
    const header = (h: object) => Buffer.from(JSON.stringify(h)).toString('base64url');
    const forged = [
      `${header({ alg: 'none', typ: 'JWT' })}.${header({ ...payload, iss: 'customer-chat', aud: 'customer-chat-api', exp: 9999999999 })}.`,
      jwt.sign(payload, 'another-secret-that-is-long-enough-0123456789', { issuer: 'customer-chat', audience: 'customer-chat-api', expiresIn: 900 }),
      jwt.sign(payload, TEST_JWT_SECRET, { issuer: 'customer-chat', audience: 'visitor', expiresIn: 900 }),
      jwt.sign(payload, TEST_JWT_SECRET, { issuer: 'someone-else', audience: 'customer-chat-api', expiresIn: 900 }),
      'not.a.token',
    ];
    for (const token of forged) {
      expectProblem(await request(app).get(tenantPath(t.tenantId)).set('Authorization', `Bearer ${token}`), 401, 'ERR_UNAUTHENTICATED');
    }
    expectProblem(await request(app).get(tenantPath(t.tenantId)).set('Authorization', 'Basic abc'), 401, 'ERR_UNAUTHENTICATED');
  });

  it('an API key that is not known: 401; without X-Tenant-ID: 401', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const unknown = await request(app).get(tenantPath(t.tenantId)).set('X-API-Key', 'key_unknown').set('X-Tenant-ID', t.tenantId);
    expectProblem(unknown, 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(app).get(tenantPath(t.tenantId)).set('X-API-Key', 'key_unknown'), 401, 'ERR_UNAUTHENTICATED');
  });

  it('X-Tenant-ID selects another of the caller\'s tenants; one they are not in is 403 ERR_FORBIDDEN', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const member = await addMember(b, { role: 'agent' });
    await addMember(a, { role: 'agent' }).catch(() => undefined);
    // The owner of A is not in B.
    const res = await request(app).get(tenantPath(b.tenantId)).set('Authorization', `Bearer ${a.owner.accessToken}`).set('X-Tenant-ID', b.tenantId);
    expectProblem(res, 403, 'ERR_FORBIDDEN');
    expect(res.text).not.to.contain(b.tenantId.slice(3));
    // A member of B reaches B with a token issued for B.
    const token = await login(member.email);
    const ok = await request(app).get(tenantPath(b.tenantId)).set('Authorization', `Bearer ${token}`).expect(200);
    expect(ok.body.id).to.equal(b.tenantId);
  });

  it('a member who was only invited, not active, is refused', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const invited = await addMember(t, { status: 'invited' });
    const res = await request(app).post('/api/v1/auth/login').send({ email: invited.email, password: PASSWORD });
    expectProblem(res, 403, 'ERR_FORBIDDEN');
  });

  it('a malformed X-Tenant-ID is a 400 naming the header', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).get(tenantPath(t.tenantId)).set('Authorization', `Bearer ${t.owner.accessToken}`).set('X-Tenant-ID', 'acme');
    expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/headers/x-tenant-id');
  });
});
