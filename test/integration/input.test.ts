import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { v4 as uuidv4 } from 'uuid';
import { MAX_ARRAY_ITEMS } from '../../src/http/input-guard.ts';
import { newId } from '../../src/shared/ids.ts';
import { PASSWORD, addMember, createConversation, createTenant, uniqueEmail, type TestTenant } from '../support/factories.ts';
import { TEST_JWT_SECRET, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (t: TestTenant) => ({ Authorization: `Bearer ${t.owner.accessToken}` });

/** A 400 ERR_VALIDATION whose findings name this place in the request. */
function expectFinding(res: request.Response, path: string, message?: RegExp): void {
  const body = expectProblem(res, 400, 'ERR_VALIDATION');
  const paths = (body.errors ?? []).map((e: { path: string }) => e.path);
  expect(paths, res.text).to.include(path);
  if (message) expect(body.errors.find((e: { path: string }) => e.path === path).message).to.match(message);
}

describe('input that no handler may see', () => {
  describe('NUL characters are refused at the contract, naming the field', () => {
    const cases: { label: string; method: 'post'; path: (t: TestTenant) => string; body: Record<string, unknown>; field: string; auth: boolean }[] = [
      { label: 'register', method: 'post', path: () => '/api/v1/auth/register', body: { email: uniqueEmail(), password: PASSWORD, name: 'A\u0000B' }, field: '/body/name', auth: false },
      { label: 'create tenant', method: 'post', path: () => '/api/v1/tenants', body: { name: 'Team\u0000' }, field: '/body/name', auth: true },
      { label: 'create contact', method: 'post', path: () => '/api/v1/contacts', body: { name: 'Ann', company: '\u0000' }, field: '/body/company', auth: true },
      { label: 'create canned response', method: 'post', path: () => '/api/v1/canned-responses', body: { shortcut: 'hi', title: 'Hi', content: 'Hello\u0000there' }, field: '/body/content', auth: true },
      { label: 'create department', method: 'post', path: () => '/api/v1/departments', body: { name: 'Sales\u0000' }, field: '/body/name', auth: true },
      { label: 'create widget', method: 'post', path: () => '/api/v1/widgets', body: { name: '\u0000' }, field: '/body/name', auth: true },
      { label: 'create API key', method: 'post', path: () => '/api/v1/api-keys', body: { name: 'k\u0000', scopes: ['tenant:read'] }, field: '/body/name', auth: true },
    ];
    for (const c of cases) {
      it(c.label, async () => {
        const { app } = await getHarness();
        const t = await createTenant();
        const res = await request(app)[c.method](c.path(t)).set(c.auth ? bearer(t) : {}).send(c.body);
        expectFinding(res, c.field, /NUL/);
      });
    }

    it('in nested values, in property names, in the query and in the path', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      expectFinding(await request(app).post('/api/v1/contacts').set(bearer(t)).send({ name: 'Ann', custom_attributes: { plan: 'pro\u0000' } }), '/body/custom_attributes/plan');
      expectFinding(await request(app).post('/api/v1/contacts').set(bearer(t)).send({ name: 'Ann', custom_attributes: { ['pl\u0000an']: 'pro' } }), '/body/custom_attributes/pl\u0000an');
      expectFinding(await request(app).get('/api/v1/contacts?q=a%00b').set(bearer(t)), '/query/q', /NUL/);
      expectFinding(await request(app).get(`/api/v1/conversations/${newId('conversation')}%00`).set(bearer(t)), '/path/id');
    });
  });

  it('lone surrogates are not text: refused, naming the field', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).post('/api/v1/departments').set(bearer(t)).set('Content-Type', 'application/json').send('{"name":"a\\ud800b"}');
    expectFinding(res, '/body/name', /surrogate/);
    const widget = await request(app).post('/api/v1/widgets').set(bearer(t)).set('Content-Type', 'application/json').send('{"name":"w","settings":{"greeting":"\\udfff"}}');
    expectFinding(widget, '/body/settings/greeting', /surrogate/);
  });

  describe('non-finite and oddly written numbers', () => {
    const lists: { label: string; path: (t: TestTenant, conversationId: string) => string }[] = [
      { label: 'api-keys', path: () => '/api/v1/api-keys' },
      { label: 'members', path: (t) => `/api/v1/tenants/${t.tenantId}/members` },
      { label: 'messages', path: (_t, c) => `/api/v1/messages/${c}` },
      { label: 'widgets', path: () => '/api/v1/widgets' },
      { label: 'events', path: () => '/api/v1/events' },
      { label: 'departments', path: () => '/api/v1/departments' },
      { label: 'canned responses', path: () => '/api/v1/canned-responses' },
    ];
    for (const list of lists) {
      it(`${list.label}: limit and offset Infinity, 1e309, hex and blank are 400`, async () => {
        const { app } = await getHarness();
        const t = await createTenant();
        const conversation = await createConversation(t);
        const base = list.path(t, conversation.id);
        for (const value of ['Infinity', '-Infinity', '1e309', '0x10', '%20']) {
          expectFinding(await request(app).get(`${base}?limit=${value}`).set(bearer(t)), '/query/limit', /integer/);
        }
        // The events feed and messages page by cursor only; the others take an offset too.
        if (list.label !== 'events' && list.label !== 'messages') {
          expectFinding(await request(app).get(`${base}?offset=Infinity`).set(bearer(t)), '/query/offset', /integer/);
        }
        await request(app).get(`${base}?limit=2`).set(bearer(t)).expect(200);
      });
    }

    it('huge and non-finite numbers in a JSON body are refused; -0 and 2^53 + 1 as limits are judged by the schema', async () => {
      const { app } = await getHarness();
      const t = await createTenant();
      const conversation = await createConversation(t);
      const raw = (body: string) => request(app).post('/api/v1/contacts').set(bearer(t)).set('Content-Type', 'application/json').send(body);
      expectFinding(await raw('{"name":"Ann","custom_attributes":{"score":1e309}}'), '/body/custom_attributes/score', /finite/);
      expectFinding(await raw('{"name":"Ann","custom_attributes":{"score":-1e309}}'), '/body/custom_attributes/score', /finite/);
      expectFinding(await request(app).get(`/api/v1/messages/${conversation.id}?limit=-0`).set(bearer(t)), '/query/limit');
      expectFinding(await request(app).get('/api/v1/departments?offset=9223372036854775808').set(bearer(t)), '/query/offset');
      // Repeated and bracketed parameters are arrays and objects, not integers.
      expectFinding(await request(app).get('/api/v1/departments?limit=1&limit=2').set(bearer(t)), '/query/limit');
      expectProblem(await request(app).get('/api/v1/departments?limit[a]=1').set(bearer(t)), 400, 'ERR_VALIDATION');
    });
  });

  it('a body nested 10,000 levels deep is refused, not walked', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const deep = `{"name":"Ann","custom_attributes":{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`;
    const res = await request(app).post('/api/v1/contacts').set(bearer(t)).set('Content-Type', 'application/json').send(deep);
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(body.errors[0].message).to.match(/nested/);
  });

  it('login and forgot-password budgets read the e-mail before validation: a deep array there is a 400', async () => {
    const { app } = await getHarness();
    const deep = `{"email":${'['.repeat(10_000)}${']'.repeat(10_000)},"password":"x"}`;
    for (const path of ['/api/v1/auth/login', '/api/v1/auth/forgot-password']) {
      expectProblem(await request(app).post(path).set('Content-Type', 'application/json').send(deep), 400, 'ERR_VALIDATION');
    }
  });

  it("an array past its schema's maxItems is refused before its items are validated: one finding, not one per item", async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    // Ten thousand actions (at most 10): the validator, reporting every error, took 11 s and answered 4.8 MB.
    const res = await request(app)
      .post('/api/v1/workflows')
      .set(bearer(t))
      .send({ name: 'W', trigger: { type: 'message.created' }, actions: Array.from({ length: 10_000 }, () => ({ type: 'send_message' })) });
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(body.errors).to.deep.equal([{ path: '/body/actions', message: 'must NOT have more than 10 items' }]);
    expect(res.text.length).to.be.below(2000);
  });

  it(`an array of more than ${MAX_ARRAY_ITEMS} items is refused wherever it is, even where the schema has no bound for it`, async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app)
      .post('/api/v1/contacts')
      .set(bearer(t))
      .send({ name: 'Ann', custom_attributes: { list: Array.from({ length: MAX_ARRAY_ITEMS + 1 }, () => 1) } });
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(body.errors).to.deep.include({ path: '/body/custom_attributes/list', message: `must NOT have more than ${MAX_ARRAY_ITEMS} items` });
  });

  it('access comes first: a NUL in the body of an unauthenticated request is 401', async () => {
    const { app } = await getHarness();
    expectProblem(await request(app).post('/api/v1/departments').send({ name: '\u0000' }), 401, 'ERR_UNAUTHENTICATED');
  });
});

describe('tokens must carry every claim they are read for', () => {
  const sign = (payload: Record<string, unknown>, options: jwt.SignOptions) => jwt.sign(payload, TEST_JWT_SECRET, { algorithm: 'HS256', issuer: 'customer-chat', ...options });

  it('access tokens without exp, sub, tid or sid are 401, even signed with the right key', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const { sid } = jwt.decode(t.owner.accessToken) as jwt.JwtPayload;
    const claims = { sub: t.owner.userId, tid: t.tenantId, sid };
    const tenantPath = `/api/v1/tenants/${t.tenantId}`;
    const withAll = sign(claims, { audience: 'customer-chat-api', expiresIn: 900 });
    await request(app).get(tenantPath).set('Authorization', `Bearer ${withAll}`).expect(200);
    const without = (claim: string) => {
      const rest = Object.fromEntries(Object.entries(claims).filter(([k]) => k !== claim));
      return sign(rest, { audience: 'customer-chat-api', ...(claim === 'exp' ? {} : { expiresIn: 900 }) });
    };
    for (const claim of ['exp', 'sub', 'tid', 'sid']) {
      const token = without(claim);
      expect(Object.keys(jwt.decode(token) as object)).not.to.include(claim);
      expectProblem(await request(app).get(tenantPath).set('Authorization', `Bearer ${token}`), 401, 'ERR_UNAUTHENTICATED');
    }
    // A session id that is not one (it would be looked up in the database) is not valid either.
    const oddSession = sign({ ...claims, sid: 'x'.repeat(5000) }, { audience: 'customer-chat-api', expiresIn: 900 });
    expectProblem(await request(app).get(tenantPath).set('Authorization', `Bearer ${oddSession}`), 401, 'ERR_UNAUTHENTICATED');
  });

  it('visitor tokens without exp, sub, tid or wid are 401, even signed with the right key', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const origin = 'https://claims.example';
    const widget = (await request(app).post('/api/v1/widgets').set(bearer(t)).send({ name: 'w' }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(bearer(t)).send({ widget_id: widget.id, domain: 'claims.example' }).expect(201);
    const session = (await request(app).post('/api/v1/widget/sessions').set('Origin', origin).send({ widget_id: widget.id, page_url: `${origin}/` }).expect(201)).body;
    const decoded = jwt.decode(session.visitor_token) as jwt.JwtPayload;
    const claims = { sub: decoded.sub, tid: decoded.tid, wid: decoded.wid };
    const call = (token: string) => request(app).get('/api/v1/widget/conversations').set('Origin', origin).set('Authorization', `Bearer ${token}`);
    await call(sign(claims, { audience: 'visitor', expiresIn: 900 })).expect(200);
    for (const claim of ['exp', 'sub', 'tid', 'wid']) {
      const rest = Object.fromEntries(Object.entries(claims).filter(([k]) => k !== claim));
      const token = sign(rest, { audience: 'visitor', ...(claim === 'exp' ? {} : { expiresIn: 900 }) });
      expectProblem(await call(token), 401, 'ERR_UNAUTHENTICATED');
    }
  });
});

describe('user_id and department_id take any UUID', () => {
  it('a v4 UUID naming nobody, bare or with usr_, is 422 ERR_USER_NOT_IN_TENANT in assign and transfer', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const conversation = await createConversation(t);
    for (const userId of [uuidv4(), `usr_${uuidv4()}`]) {
      expectProblem(await request(app).post(`/api/v1/conversations/${conversation.id}/assign`).set(bearer(t)).send({ user_id: userId }), 422, 'ERR_USER_NOT_IN_TENANT');
      expectProblem(await request(app).post(`/api/v1/conversations/${conversation.id}/transfer`).set(bearer(t)).send({ user_id: userId }), 422, 'ERR_USER_NOT_IN_TENANT');
    }
    // A member's own id still works, in both forms.
    const agent = await addMember(t, { role: 'agent' });
    await request(app).post(`/api/v1/conversations/${conversation.id}/assign`).set(bearer(t)).send({ user_id: agent.userId.slice(4) }).expect(200);
    await request(app).post(`/api/v1/conversations/${conversation.id}/transfer`).set(bearer(t)).send({ user_id: agent.userId }).expect(200);
    // Not a UUID at all is still the schema's 400.
    expectFinding(await request(app).post(`/api/v1/conversations/${conversation.id}/assign`).set(bearer(t)).send({ user_id: 'usr_nobody' }), '/body/user_id');
  });

  it('a v4 department UUID naming nothing is 422 ERR_INVALID_DEPARTMENT', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const conversation = await createConversation(t);
    const res = await request(app).post(`/api/v1/conversations/${conversation.id}/transfer`).set(bearer(t)).send({ department_id: uuidv4() });
    expectProblem(res, 422, 'ERR_INVALID_DEPARTMENT');
  });
});
