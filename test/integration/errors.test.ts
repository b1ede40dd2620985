import { expect } from 'chai';
import pino from 'pino';
import request from 'supertest';
import { toAppError } from '../../src/http/problem.ts';
import { AppError } from '../../src/shared/errors.ts';
import { createTenant } from '../support/factories.ts';
import { TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

describe('errors are problem+json', () => {
  it('ERR_VALIDATION lists each of the validator findings with its place in the request', async () => {
    const { app } = await getHarness();
    const res = await request(app)
      .post('/api/v1/auth/register')
      .send({ email: 'not-an-email', password: 'short', unexpected: true });
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    const paths = body.errors.map((e: { path: string }) => e.path);
    expect(paths).to.include.members(['/body/email', '/body/password', '/body/name']);
    expect(body.errors.every((e: { message: string }) => typeof e.message === 'string' && e.message.length > 0)).to.equal(true);
    expect(JSON.stringify(body.errors)).to.contain('unexpected');
  });

  it('ERR_VALIDATION for a body that is not JSON at all', async () => {
    const { app } = await getHarness();
    const res = await request(app).post('/api/v1/auth/login').set('Content-Type', 'application/json').send('{"email": ');
    const body = expectProblem(res, 400, 'ERR_VALIDATION');
    expect(body.errors).to.deep.equal([{ path: '/body', message: 'is not valid JSON' }]);
  });

  it('ERR_VALIDATION for query parameters out of range and unknown ones', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const tooMany = await request(app)
      .get(`/api/v1/tenants/${t.tenantId}/members?limit=101`)
      .set('Authorization', `Bearer ${t.owner.accessToken}`);
    expect(expectProblem(tooMany, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/query/limit');
    const unknown = await request(app)
      .get(`/api/v1/tenants/${t.tenantId}/members?colour=red`)
      .set('Authorization', `Bearer ${t.owner.accessToken}`);
    expect(JSON.stringify(expectProblem(unknown, 400, 'ERR_VALIDATION').errors)).to.contain('colour');
  });

  it('ERR_VALIDATION for a malformed identifier in the path', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const res = await request(app).get('/api/v1/tenants/tn_nope').set('Authorization', `Bearer ${t.owner.accessToken}`);
    expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/path/id');
  });

  it('ERR_NOT_FOUND for routes the contract does not have, inside and outside /api', async () => {
    const { app } = await getHarness();
    expectProblem(await request(app).get('/api/v1/nothing-here'), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).get('/'), 404, 'ERR_NOT_FOUND');
  });

  it('ERR_METHOD_NOT_ALLOWED for a method the route does not have', async () => {
    const { app } = await getHarness();
    expectProblem(await request(app).delete('/api/health'), 405, 'ERR_METHOD_NOT_ALLOWED');
  });

  it('ERR_PAYLOAD_TOO_LARGE for a JSON body over 1 MiB, before anything else reads it', async () => {
    const { app } = await getHarness();
    const res = await request(app)
      .post('/api/v1/auth/register')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ email: 'a@example.test', password: 'x'.repeat(1024 * 1024), name: 'A' }));
    expectProblem(res, 413, 'ERR_PAYLOAD_TOO_LARGE');
  });

  it('accepts a JSON body just under the limit (and judges it by the schema instead)', async () => {
    const { app } = await getHarness();
    const res = await request(app)
      .post('/api/v1/auth/register')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ email: 'a@example.test', password: 'x'.repeat(1024 * 1024 - 100), name: 'A' }));
    expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/body/password');
  });

  it('ERR_UNSUPPORTED_MEDIA_TYPE for a body that is not application/json', async () => {
    const { app } = await getHarness();
    const plain = await request(app).post('/api/v1/auth/login').set('Content-Type', 'text/plain').send('email=a');
    expectProblem(plain, 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
    const form = await request(app).post('/api/v1/auth/login').type('form').send({ email: 'a@example.test', password: 'x' });
    expectProblem(form, 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
  });

  it('ERR_INTERNAL for an unexpected failure, without its message, stack or SQL', async () => {
    const h = await getHarness();
    const logged: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(line) });
    const app = h.appWith(
      {
        handlers: {
          getHealth: async () => {
            throw new Error('relation "secret_table" does not exist: SELECT password_hash FROM users');
          },
        },
      },
      { logger },
    );
    const res = await request(app).get('/api/health').set('X-Request-Id', 'trace-me-123');
    const body = expectProblem(res, 500, 'ERR_INTERNAL');
    expect(body.request_id).to.equal('trace-me-123');
    expect(res.text).not.to.match(/secret_table|password_hash|SELECT|at .*\.ts/);
    // The details go to the log, under the same request id.
    expect(logged.join('\n')).to.contain('secret_table').and.to.contain('trace-me-123');
  });

  it('a typed error thrown by a service keeps its code', async () => {
    const h = await getHarness();
    // An operation that declares its 409: the run fails on any answer an operation does not declare.
    const app = h.appWith({
      handlers: {
        register: async () => {
          throw new AppError('ERR_CONFLICT', 'That shortcut is taken');
        },
      },
    });
    const res = await request(app).post('/api/v1/auth/register').send({ email: 'typed@example.test', password: 'long enough password', name: 'T' });
    const body = expectProblem(res, 409, 'ERR_CONFLICT');
    expect(body.detail).to.equal('That shortcut is taken');
  });

  it('a response that breaks the contract is caught and never reaches the client', async () => {
    const h = await getHarness();
    const app = h.appWith({
      handlers: { getHealth: async () => ({ status: 200, body: { status: 'fine', leaked: 'internal' } as never }) },
    });
    const res = await request(app).get('/api/health');
    expectProblem(res, 500, 'ERR_INTERNAL');
    expect(res.text).not.to.contain('leaked');
  });

  it('with response validation switched off, the same handler answers as written', async () => {
    const h = await getHarness();
    const app = h.appWith(
      { handlers: { getHealth: async () => ({ status: 200, body: { status: 'fine' } as never }) } },
      { config: { ...TEST_CONFIG, validateResponses: false } },
    );
    const res = await request(app).get('/api/health').expect(200);
    expect(res.body).to.deep.equal({ status: 'fine' });
  });

  it('honours a sane incoming X-Request-Id and replaces an unsafe one', async () => {
    const { app } = await getHarness();
    const given = await request(app).get('/api/health').set('X-Request-Id', 'abc-123');
    expect(given.headers['x-request-id']).to.equal('abc-123');
    const unsafe = await request(app).get('/api/health').set('X-Request-Id', 'a b<script>');
    expect(unsafe.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });
});

describe('a row removed under a write', () => {
  it('an insert naming a row that vanished is 404 ERR_NOT_FOUND (and logged); a delete still referenced stays a 500', () => {
    // What pg and PGlite throw (SQLSTATE 23503), for a race no single-connection database can stage.
    const vanished = Object.assign(new Error('insert or update on table "department_members" violates foreign key constraint "department_members_tenant_id_user_id_fkey"'), { code: '23503' });
    const mapped = toAppError(vanished);
    expect(mapped.unexpected).to.equal(true);
    expect(mapped.error.code).to.equal('ERR_NOT_FOUND');
    const stillReferenced = Object.assign(new Error('update or delete on table "departments" violates foreign key constraint "x" on table "bots"'), { code: '23503' });
    expect(toAppError(stillReferenced).error.code).to.equal('ERR_INTERNAL');
  });
});
