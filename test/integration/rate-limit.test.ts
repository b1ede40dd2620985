import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import request from 'supertest';
import { createClient } from 'redis';
import { resilientStoreFactory } from '../../src/http/rate-limit.ts';
import { createTenant, PASSWORD, uniqueEmail } from '../support/factories.ts';
import { TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const limits = (overrides: Partial<typeof TEST_CONFIG.rateLimits>) => ({
  config: { ...TEST_CONFIG, rateLimits: { ...TEST_CONFIG.rateLimits, ...overrides } },
});

describe('rate limits', () => {
  it('per credential: past the budget, 429 ERR_RATE_LIMITED with Retry-After and the IETF headers', async () => {
    const h = await getHarness();
    const app = h.appWith({}, limits({ perMinute: 3 }));
    const t = await createTenant();
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    for (let i = 0; i < 3; i++) {
      const ok = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set(auth).expect(200);
      expect(ok.headers['ratelimit-policy']).to.match(/^"requests"; q=3; w=60/);
      expect(ok.headers['ratelimit']).to.match(new RegExp(`^"requests"; r=${2 - i}; t=\\d+`));
    }
    const res = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set(auth);
    expectProblem(res, 429, 'ERR_RATE_LIMITED');
    expect(Number(res.headers['retry-after'])).to.be.within(1, 60);
    // Another user has a budget of their own.
    const other = await createTenant();
    await request(app).get(`/api/v1/tenants/${other.tenantId}`).set({ Authorization: `Bearer ${other.owner.accessToken}` }).expect(200);
  });

  it('the per-credential headers are the ones express-rate-limit writes itself (draft-8), on the 429 too', async () => {
    const h = await getHarness();
    const app = h.appWith({}, limits({ perMinute: 2 }));
    const t = await createTenant();
    // The library's own draft-8 limiter, counting the same key in the same window.
    const reference = express();
    reference.use(
      rateLimit({ identifier: 'requests', windowMs: 60_000, limit: 2, standardHeaders: 'draft-8', legacyHeaders: false, keyGenerator: () => `user:${t.owner.userId}` }),
    );
    reference.get('/', (_req, res) => res.end());
    const headersOf = (res: request.Response) => ({
      policy: res.headers['ratelimit-policy'] as string,
      limit: String(res.headers['ratelimit']).replace(/t=\d+/, 't=?'),
      retryAfter: res.headers['retry-after'] !== undefined,
      status: res.status,
    });
    for (let i = 0; i < 3; i++) {
      const ours = await request(app).get(`/api/v1/tenants/${t.tenantId}`).set({ Authorization: `Bearer ${t.owner.accessToken}` });
      const theirs = await request(reference).get('/');
      expect(headersOf(ours), `request ${i + 1}`).to.deep.equal(headersOf(theirs));
      expect(ours.headers['ratelimit-policy']).to.match(/pk=:[A-Za-z0-9+/=]+:$/);
    }
  });

  it('health probes are never limited', async () => {
    const h = await getHarness();
    const app = h.appWith({}, limits({ perMinute: 1 }));
    for (let i = 0; i < 3; i++) await request(app).get('/api/health').expect(200);
  });

  it('login: a tight budget per e-mail and address, even for the right password', async () => {
    const h = await getHarness();
    const app = h.appWith({}, limits({ login: 2 }));
    const t = await createTenant();
    const first = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: 'wrong password' }).expect(401);
    // Both budgets count it, and say so: the address's requests, then the e-mail's logins.
    expect(first.headers['ratelimit-policy']).to.match(/^"requests"; q=\d+; w=60; pk=:[A-Za-z0-9+/=]+:, "login"; q=2; w=900; pk=:[A-Za-z0-9+/=]+:$/);
    expect(first.headers['ratelimit']).to.match(/^"requests"; r=\d+; t=\d+, "login"; r=1; t=(900|899)$/);
    await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: 'wrong again!' }).expect(401);
    const refused = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: PASSWORD });
    expectProblem(refused, 429, 'ERR_RATE_LIMITED');
    // The login budget's own window, in the header and the message.
    expect(Number(refused.headers['retry-after'])).to.be.within(890, 900);
    expect(refused.body.detail).to.equal(`Too many requests; retry after ${refused.headers['retry-after']} seconds`);
    // The same address may still log in someone else.
    const other = await createTenant();
    await request(app).post('/api/v1/auth/login').send({ email: other.owner.email, password: PASSWORD }).expect(200);
  });

  it('forgot-password: a budget per e-mail, answered as 429 like any other limit', async () => {
    const h = await getHarness();
    const app = h.appWith({}, limits({ forgotPassword: 1 }));
    const email = uniqueEmail();
    await request(app).post('/api/v1/auth/forgot-password').send({ email }).expect(202);
    expectProblem(await request(app).post('/api/v1/auth/forgot-password').send({ email: email.toUpperCase() }), 429, 'ERR_RATE_LIMITED');
    await request(app).post('/api/v1/auth/forgot-password').send({ email: uniqueEmail() }).expect(202);
  });

  describe('shared through Redis', () => {
    const redisUrl = process.env.REDIS_URL;
    let redis: ReturnType<typeof createClient> | undefined;

    before(async function () {
      if (!redisUrl) this.skip();
      redis = createClient({ url: redisUrl });
      await redis.connect();
    });
    after(async () => {
      await redis?.quit();
    });

    it('two app instances count into one budget', async () => {
      const h = await getHarness();
      const namespace = `test-${randomUUID()}`;
      const store = () => resilientStoreFactory((...args: string[]) => redis!.sendCommand(args), namespace);
      const one = h.appWith({}, { ...limits({ perMinute: 4 }), rateLimitStore: store() });
      const two = h.appWith({}, { ...limits({ perMinute: 4 }), rateLimitStore: store() });
      const t = await createTenant();
      const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
      const path = `/api/v1/tenants/${t.tenantId}`;
      await request(one).get(path).set(auth).expect(200);
      await request(two).get(path).set(auth).expect(200);
      await request(one).get(path).set(auth).expect(200);
      await request(two).get(path).set(auth).expect(200);
      expectProblem(await request(one).get(path).set(auth), 429, 'ERR_RATE_LIMITED');
      expectProblem(await request(two).get(path).set(auth), 429, 'ERR_RATE_LIMITED');
      expect(await redis!.keys(`${namespace}:rl:requests:*`)).to.have.length(1);
    });
  });
});
