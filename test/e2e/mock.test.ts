import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'chai';
import request from 'supertest';
import { loadContract } from '../../src/http/contract.ts';
import { getHarness } from '../support/harness.ts';
import { startMock } from '../support/mock.ts';

// `npm run mock` (scripts/mock.ts) and the service answer one URL space: a frontend switches from one
// to the other by its base URL alone.
describe('the mock (npm run mock)', function () {
  this.timeout(60_000);
  let mock: ChildProcess;
  let base: string;

  before(async () => {
    ({ base, process: mock } = await startMock());
  });

  after(async () => {
    if (mock.exitCode === null) {
      mock.kill('SIGTERM');
      await once(mock, 'exit');
    }
  });

  it('answers /api/health as the service does, and neither answers the bare /health', async () => {
    const { app } = await getHarness();
    const mocked = await fetch(`${base}/api/health`);
    expect(mocked.status).to.equal(200);
    expect(await mocked.json()).to.have.property('status', 'ok');
    await request(app).get('/api/health').expect(200);
    expect((await fetch(`${base}/health`)).status).to.equal(404);
    await request(app).get('/health').expect(404);
  });

  it('answers a /api/v1 list from the contract example, with a credential as the service needs one', async () => {
    const mocked = await fetch(`${base}/api/v1/conversations`, { headers: { authorization: 'Bearer token' } });
    expect(mocked.status).to.equal(200);
    expect(await mocked.json()).to.have.property('data').that.is.an('array');
  });

  it("answers an operation's own errors: its 404 and 409 first, another by Prefer: example=NAME", async () => {
    const id = 'conv_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a60';
    const ask = async (method: string, path: string, prefer: string, body?: unknown) => {
      const headers = { authorization: 'Bearer token', prefer, ...(body ? { 'content-type': 'application/json' } : {}) };
      const res = await fetch(`${base}/api${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const missing = await ask('GET', `/v1/conversations/${id}`, 'code=404');
    expect(missing.status).to.equal(404);
    expect(missing.body).to.include({ code: 'ERR_NOT_FOUND', detail: 'Conversation not found' });
    expect((await ask('POST', `/v1/conversations/${id}/reopen`, 'code=409')).body).to.include({ code: 'ERR_CONVERSATION_NOT_CLOSED' });
    expect((await ask('POST', `/v1/conversations/${id}/close`, 'code=409')).body).to.include({ code: 'ERR_CONVERSATION_CLOSED' });
    expect((await ask('POST', '/v1/auth/login', 'code=401', { email: 'ada@example.com', password: 'correct horse battery' })).body).to.include({ detail: 'The e-mail address or the password is wrong' });
    const transfer = await ask('POST', `/v1/conversations/${id}/transfer`, 'code=409, example=DepartmentNoAgents', { department_id: '01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a61' });
    expect(transfer.body).to.include({ code: 'ERR_DEPARTMENT_NO_AGENTS' });
  });

  it('routes every operation at the path the service routes it', async () => {
    const { app } = await getHarness();
    const { operations, basePath } = loadContract();
    expect(basePath).to.equal('/api');
    for (const op of operations) {
      const path = basePath + op.path.replace(/\{\w+\}/g, 'x');
      const mocked = await fetch(base + path, { method: op.method.toUpperCase(), headers: { 'content-type': 'application/json' }, body: op.method === 'get' || op.method === 'delete' ? undefined : '{}' });
      const problem = mocked.headers.get('content-type')?.includes('json') ? ((await mocked.json()) as { type?: string }) : {};
      expect(String(problem.type ?? ''), `mock: ${op.method} ${path}`).not.to.match(/NO_PATH_MATCHED|NO_METHOD_MATCHED/);
      const served = await request(app)[op.method](path);
      expect(served.body.detail ?? '', `service: ${op.method} ${path}`).not.to.match(/No such route|does not support this method/);
    }
  });
});
