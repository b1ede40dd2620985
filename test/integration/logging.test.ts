import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { type IncomingMessage, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import request from 'supertest';
import { getHarness } from '../support/harness.ts';
import { PASSWORD, uniqueEmail } from '../support/factories.ts';

const SITE = 'https://logs.example';

/** A logger that keeps every line it writes, parsed. */
function memoryLogger(level: pino.Level = 'trace') {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
      // A sentinel for tests that wait for a line.
      stream.emit('written');
    },
  });
  return { logger: pino({ level }, stream), stream, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, any>) };
}

describe('request logs', () => {
  it('say what was asked, by whom, how it ended and why it was refused, and never carry a secret', async () => {
    const h = await getHarness();
    const log = memoryLogger();
    const app = h.appWith({}, { logger: log.logger });
    const secrets: Record<string, string> = { password: PASSWORD };

    const email = uniqueEmail('logs');
    const reg = await request(app).post('/api/v1/auth/register').send({ email, password: PASSWORD, name: 'Owner', tenant_name: 'Logs' }).expect(201);
    const tenantId: string = reg.body.tenant.id;
    const userId: string = reg.body.user.id;
    secrets.registerAccessToken = reg.body.access_token;
    secrets.registerRefreshToken = reg.body.refresh_token;
    await request(app).post('/api/v1/auth/login').send({ email, password: 'a wrong password, also secret' }).expect(401);
    secrets.wrongPassword = 'a wrong password, also secret';
    const login = await request(app).post('/api/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
    const refreshed = await request(app).post('/api/v1/auth/refresh').send({ refresh_token: login.body.refresh_token }).expect(200);
    secrets.loginRefreshToken = login.body.refresh_token;
    secrets.accessToken = refreshed.body.access_token;
    secrets.refreshToken = refreshed.body.refresh_token;
    const auth = { Authorization: `Bearer ${secrets.accessToken}` };

    const key = await request(app).post('/api/v1/api-keys').set(auth).send({ name: 'logs', scopes: ['conversations:read'] }).expect(201);
    secrets.apiKey = key.body.key;
    await request(app).get('/api/v1/conversations').set({ 'X-API-Key': secrets.apiKey, 'X-Tenant-ID': tenantId }).expect(200);

    const widget = await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Site', identity_required: false }).expect(201);
    secrets.identitySecret = widget.body.identity_secret;
    await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.body.id, domain: 'logs.example' }).expect(201);
    const userHash = createHmac('sha256', widget.body.identity_secret as string).update('vera@logs.example').digest('hex');
    secrets.userHash = userHash;
    const session = await request(app)
      .post('/api/v1/widget/sessions')
      .set('Origin', SITE)
      .send({ widget_id: widget.body.id, page_url: `${SITE}/`, user: { email: 'vera@logs.example', user_hash: userHash } })
      .expect(201);
    secrets.visitorToken = session.body.visitor_token ?? session.body.token;
    expect(secrets.visitorToken, 'the session answers a visitor token').to.be.a('string');
    await request(app).get('/api/v1/widget/conversations').set({ Authorization: `Bearer ${secrets.visitorToken}`, Origin: SITE }).expect(200);
    const ticket = await request(app).post('/api/v1/ws/tickets').set(auth).expect(201);
    secrets.ticket = ticket.body.ticket;

    // Refusals: an unknown conversation, a bad token naming a tenant, an API key on a user-only operation.
    await request(app).get('/api/v1/conversations/conv_01935d6e-0000-7000-8000-000000000000').set(auth).expect(404);
    await request(app).get('/api/v1/conversations').set({ Authorization: `Bearer ${secrets.registerAccessToken}x`, 'X-Tenant-ID': tenantId }).expect(401);
    await request(app).post('/api/v1/ws/tickets').set({ 'X-API-Key': secrets.apiKey, 'X-Tenant-ID': tenantId }).expect(403);
    await request(app).post('/api/v1/auth/logout').set(auth).send({ refresh_token: secrets.refreshToken });

    const records = log.records();
    const lineOf = (operation: string, status: number) => {
      const found = records.find((r) => r.operation === operation && r.status === status);
      expect(found, `a log line for ${operation} ${status}`).to.exist;
      return found!;
    };

    const notFound = lineOf('getConversation', 404);
    expect(notFound).to.include({ level: 40, code: 'ERR_NOT_FOUND', tenant_id: tenantId, user_id: userId });
    expect(notFound.duration_ms).to.be.a('number');
    expect(notFound.req.id).to.be.a('string');
    expect(lineOf('listConversations', 401)).to.include({ code: 'ERR_UNAUTHENTICATED', tenant_id: tenantId });
    expect(lineOf('createWsTicket', 403)).to.include({ code: 'ERR_USER_TOKEN_REQUIRED', tenant_id: tenantId });
    expect(lineOf('login', 401)).to.include({ code: 'ERR_UNAUTHENTICATED' });
    const byKey = lineOf('listConversations', 200);
    expect(byKey).to.include({ tenant_id: tenantId, key_id: key.body.id, level: 30 });
    expect(byKey).not.to.have.property('code');
    expect(lineOf('listWidgetConversations', 200)).to.include({ tenant_id: tenantId, visitor_id: session.body.visitor_id });

    // No secret, whole or its last 16 characters, in any line: requests, answers, anything logged.
    expect(log.lines.length).to.be.at.least(15);
    for (const [name, value] of Object.entries(secrets)) {
      expect(value, name).to.be.a('string').with.length.above(16);
      for (const needle of [value, value.slice(-16)]) {
        const leaked = log.lines.find((line) => line.includes(needle));
        expect(leaked, `${name} appears in a log line`).to.equal(undefined);
      }
    }
  });

  it('at LOG_LEVEL=warn, answers that went well write nothing and refusals still write their line', async () => {
    const h = await getHarness();
    const log = memoryLogger('warn');
    const app = h.appWith({}, { logger: log.logger });
    const email = uniqueEmail('quiet');
    const reg = await request(app).post('/api/v1/auth/register').send({ email, password: PASSWORD, name: 'Owner' }).expect(201);
    const auth = { Authorization: `Bearer ${reg.body.access_token}` };
    await request(app).get('/api/v1/conversations').set(auth).expect(200);
    expect(log.records().filter((r) => r.operation !== undefined), 'lines for 2xx answers').to.deep.equal([]);
    const missing = await request(app).get('/api/v1/conversations/conv_01935d6e-0000-7000-8000-000000000000').set(auth).expect(404);
    const lines = log.records().filter((r) => r.operation === 'getConversation');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 40, status: 404, code: 'ERR_NOT_FOUND', msg: 'request completed' });
    expect(lines[0]!.req).to.include({ id: missing.headers['x-request-id'], method: 'GET' });
    expect(lines[0]!.req.headers.authorization).to.equal('[Redacted]');
  });

  it('an unexpected failure: the error line and the request line, credentials redacted in both', async () => {
    const h = await getHarness();
    const log = memoryLogger();
    const app = h.appWith(
      {
        handlers: {
          getHealth: async () => {
            throw new Error('the storage went away');
          },
        },
      },
      { logger: log.logger },
    );
    await request(app).get('/api/health').set({ Authorization: 'Bearer secret-bearer-value-0123456789', 'X-API-Key': 'secret-key-value-0123456789', Cookie: 'sid=secret-cookie-0123456789' }).expect(500);
    const unexpected = log.records().find((r) => r.msg === 'unexpected error');
    const line = log.records().find((r) => r.operation === 'getHealth');
    expect(unexpected?.err?.message).to.equal('the storage went away');
    expect(line).to.include({ level: 50, status: 500, msg: 'request errored', code: 'ERR_INTERNAL' });
    for (const record of [unexpected!, line!]) {
      expect(record.req.headers).to.include({ authorization: '[Redacted]', 'x-api-key': '[Redacted]', cookie: '[Redacted]' });
    }
    expect(log.lines.join('\n')).not.to.contain('secret-');
  });

  it('an answer cut off before its end is logged once, as aborted', async () => {
    const h = await getHarness();
    const log = memoryLogger();
    const body = new PassThrough();
    const app = h.appWith({ handlers: { getHealth: async () => ({ status: 200, stream: body }) } as never }, { logger: log.logger });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const answer = new Promise<IncomingMessage>((resolve, reject) => get(`http://127.0.0.1:${port}/api/health`, resolve).once('error', reject));
      body.write('{"status":');
      const res = await answer;
      // The client leaves with the answer half written.
      res.destroy();
      const lines = () => log.records().filter((r) => r.operation === 'getHealth');
      while (lines().length === 0) await once(log.stream, 'written');
      expect(lines()).to.have.length(1);
      expect(lines()[0]).to.include({ msg: 'request aborted', aborted: true });
    } finally {
      body.destroy();
      server.close();
    }
  });
});
