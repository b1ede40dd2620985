import { expect } from 'chai';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import fc from 'fast-check';
import request from 'supertest';
import { parameterMutationForTests, skipPlainParameterMutation } from '../../src/http/parameter-mutator.ts';
import { createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

// src/http/parameter-mutator.ts lets requests of operations with plain parameters skip the validator's
// parameter rewriting: whatever the query, the answer must be the one the whole rewriting gives.

const KEYS = ['status', 'limit', 'offset', 'cursor', 'q', 'assigned_to', 'priority', 'widget_id', 'unknown', 'a[b]', 'status%5Bx%5D', 'limit[]', 's', 'n', 's[a]'];
const PIECES = ['open', 'closed', '20', '0', '-1', 'me', 'x', ',', ':', '/', '?', '@', '!', '$', "'", '(', ')', '*', '+', ';', '[', ']', '=', '%2C', '%3A', '%5B', '%5D', '%20', '%', '{}', '"'];

const queryString = fc
  .array(fc.tuple(fc.constantFrom(...KEYS), fc.array(fc.constantFrom(...PIECES), { maxLength: 3 }).map((p) => p.join(''))), { maxLength: 4 })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

describe('parameter rewriting skipped for plain parameters', () => {
  afterEach(() => parameterMutationForTests.setSkipping(true));

  it('answers every query exactly as the validator rewriting it would (list conversations, list visitors)', async () => {
    const h = await getHarness();
    const t = await createTenant();
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    const answer = async (url: string) => {
      const res = await request(h.app).get(url).set(auth);
      // Each answer's own id is no part of what is compared.
      const { request_id: _, ...body } = res.body as Record<string, unknown>;
      return { status: res.status, body };
    };
    // Each operation's first request goes through the whole rewriting; the skip applies from the second.
    await answer('/api/v1/conversations');
    await answer('/api/v1/visitors');
    const skipsBefore = parameterMutationForTests.skips();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/api/v1/conversations', '/api/v1/visitors'), queryString, async (path, query) => {
        const url = query ? `${path}?${query}` : path;
        parameterMutationForTests.setSkipping(true);
        const skipped = await answer(url);
        parameterMutationForTests.setSkipping(false);
        const whole = await answer(url);
        expect(skipped, `${url}: ${JSON.stringify(skipped)} ${JSON.stringify(whole)}`).to.deep.equal(whole);
      }),
      { numRuns: 150 },
    );
    // The property would hold with the skip never taken: it was, for some of them.
    expect(parameterMutationForTests.skips()).to.be.greaterThan(skipsBefore);
  });

  it('is taken for a plain query, not for one with a reserved character or a bracketed key', async () => {
    const h = await getHarness();
    const t = await createTenant();
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    await request(h.app).get('/api/v1/conversations').set(auth).expect(200);
    const skips = parameterMutationForTests.skips();
    await request(h.app).get('/api/v1/conversations?status=open&limit=5').set(auth).expect(200);
    expect(parameterMutationForTests.skips()).to.equal(skips + 1);
    // The validator refuses an unencoded reserved character in a value: still, with the skip there.
    const refused = await request(h.app).get('/api/v1/conversations?q=a:b').set(auth);
    expect(refused.status).to.equal(400);
    expect(JSON.stringify(refused.body)).to.contain('reserved characters');
    await request(h.app).get('/api/v1/conversations?a%5Bb%5D=1').set(auth);
    expect(parameterMutationForTests.skips()).to.equal(skips + 1);
  });

  it('is never taken for parameters the validator rewrites (arrays, objects, content, cookies, unexploded values), whose answers stay its own', async () => {
    skipPlainParameterMutation();
    const parameter = (name: string, extra: Record<string, unknown>) => ({ name, in: 'query', schema: { type: 'string' }, ...extra });
    // 400 and 500 declared: the run's check of declared statuses (test/support/hooks.ts) reads this contract too, and the validator fails on `?s` for an unexploded value.
    const operation = (parameters: unknown[]) => ({
      get: { parameters, responses: { '200': { description: 'the query as read' }, '400': { description: 'refused' }, '500': { description: 'the validator failed' } } },
    });
    const paths = {
      '/plain': operation([parameter('s', {}), parameter('n', { schema: { type: 'integer' } })]),
      '/array': operation([parameter('s', { schema: { type: 'array', items: { type: 'string' } } })]),
      '/unexploded': operation([parameter('s', { explode: false, schema: { type: 'array', items: { type: 'string' } } })]),
      '/unexploded-value': operation([parameter('s', { explode: false })]),
      '/object': operation([parameter('s', { schema: { type: 'object', properties: { a: { type: 'string' } } } })]),
      '/deep': operation([parameter('s', { style: 'deepObject', schema: { type: 'object', properties: { a: { type: 'string' } } } })]),
      '/json': operation([{ name: 's', in: 'query', content: { 'application/json': { schema: { type: 'object' } } } }]),
      '/one-of': operation([parameter('s', { schema: { oneOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { type: 'string' }] } })]),
      '/cookie': operation([{ name: 's', in: 'cookie', schema: { type: 'string' } }]),
    };
    const app = express();
    app.use(OpenApiValidator.middleware({ apiSpec: { openapi: '3.1.0', info: { title: 't', version: '1' }, paths } as never, validateRequests: true, validateResponses: false }));
    app.get('/:path', (req, res) => res.json({ query: req.query }));
    app.use((err: { status?: number; message: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(err.status ?? 500).json({ error: err.message });
    });
    const answer = async (url: string) => {
      const res = await request(app).get(url);
      return { status: res.status, body: res.body as unknown };
    };
    const routes = Object.keys(paths);
    // Each operation's first request decides whether it is plain.
    for (const route of routes) await answer(route);
    const skipsBefore = parameterMutationForTests.skips();
    for (const route of routes.filter((r) => r !== '/plain')) {
      for (const query of ['', 's=a', 's=a,b', 's=a&s=b', 's[a]=x', 's=%7B%22a%22%3A1%7D', 's']) await answer(`${route}?${query}`);
    }
    expect(parameterMutationForTests.skips(), 'skips on operations that are not plain').to.equal(skipsBefore);
    await answer('/plain?s=a&n=1');
    expect(parameterMutationForTests.skips(), 'the plain one').to.equal(skipsBefore + 1);
    // And wherever it is taken, the answers are the validator's own.
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), queryString, async (route, query) => {
        const url = query ? `${route}?${query}` : route;
        parameterMutationForTests.setSkipping(true);
        const skipped = await answer(url);
        parameterMutationForTests.setSkipping(false);
        expect(skipped, url).to.deep.equal(await answer(url));
      }),
      { numRuns: 150 },
    );
  });
});
