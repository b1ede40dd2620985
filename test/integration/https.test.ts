import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { loadConfig } from '../../src/config.ts';
import { loadContract } from '../../src/http/contract.ts';
import { startService, type RunningService } from '../../src/server.ts';
import { createTenant } from '../support/factories.ts';
import { TEST_CONFIG, TEST_JWT_SECRET, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

describe('HTTPS', () => {
  const production = (trustProxy: boolean | string) => ({ config: { ...TEST_CONFIG, requireHttps: true, trustProxy } });

  it('in production, plain HTTP is refused with ERR_HTTPS_REQUIRED (probes excepted)', async () => {
    const h = await getHarness();
    const app = h.appWith({}, production('loopback'));
    const t = await createTenant();
    expectProblem(await request(app).get(`/api/v1/tenants/${t.tenantId}`).set('Authorization', `Bearer ${t.owner.accessToken}`), 403, 'ERR_HTTPS_REQUIRED');
    expectProblem(await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: 'x' }), 403, 'ERR_HTTPS_REQUIRED');
    expectProblem(await request(app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').send('{}'), 403, 'ERR_HTTPS_REQUIRED');
    await request(app).get('/api/health').expect(200);
  });

  it('every operation but the probes declares the 403 it answers over plain HTTP', () => {
    // Refused before the request's operation is looked up, so the run's check of declared answers
    // (test/support/hooks.ts) does not see these.
    const { document, operations } = loadContract();
    const undeclared = operations
      .filter((op) => !['getHealth', 'getReady'].includes(op.operationId))
      .filter((op) => !('403' in document.paths[op.path][op.method].responses))
      .map((op) => op.operationId);
    expect(undeclared).to.deep.equal([]);
  });

  it('behind a trusted proxy that says https, requests pass and HSTS is sent', async () => {
    const h = await getHarness();
    const app = h.appWith({}, production('loopback'));
    const res = await request(app).get('/api/openapi.json').set('X-Forwarded-Proto', 'https').expect(200);
    expect(res.headers['strict-transport-security']).to.equal('max-age=31536000; includeSubDomains');
  });

  it('X-Forwarded-Proto from a proxy that is not trusted is ignored', async () => {
    const h = await getHarness();
    const app = h.appWith({}, production(false));
    expectProblem(await request(app).get('/api/openapi.json').set('X-Forwarded-Proto', 'https'), 403, 'ERR_HTTPS_REQUIRED');
  });

  describe('served directly over TLS', () => {
    let dir: string;
    let service: RunningService | undefined;

    before(async function () {
      this.timeout(60_000);
      dir = await mkdtemp(join(tmpdir(), 'chat-tls-'));
      execFileSync('openssl', [
        'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      ], { stdio: 'ignore' });
      service = await startService(
        loadConfig({
          NODE_ENV: 'production',
          JWT_SECRET: TEST_JWT_SECRET,
          HOST: '127.0.0.1',
          PORT: '0',
          DATA_DIR: dir,
          DATABASE_URL: 'pglite://memory',
          LOG_LEVEL: 'silent',
          BCRYPT_COST: '4',
          TLS_CERT_FILE: join(dir, 'cert.pem'),
          TLS_KEY_FILE: join(dir, 'key.pem'),
        }),
      );
    });
    after(async () => {
      await service?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    it('answers over TLS with HSTS, in production mode', async () => {
      expect(service!.url).to.match(/^https:/);
      const { status, hsts } = await new Promise<{ status: number; hsts: string | undefined }>((resolve, reject) => {
        const req = httpsRequest(`${service!.url}/api/openapi.json`, { rejectUnauthorized: false }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, hsts: res.headers['strict-transport-security'] as string | undefined });
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).to.equal(200);
      expect(hsts).to.contain('max-age=');
    });
  });
});
