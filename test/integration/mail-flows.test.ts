import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Express } from 'express';
import pino from 'pino';
import request from 'supertest';
import { hashOpaqueToken } from '../../src/auth/tokens.ts';
import { createMailer, type Mailer } from '../../src/mail/mailer.ts';
import { createTenant, PASSWORD, uniqueEmail } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { startSmtpServer, tokenFromMail } from '../support/smtp.ts';

// The mail links work end to end: each test's app sends through a real SMTP server on loopback,
// and the test follows the link from the mail that server received.
describe('mail flows over SMTP', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let mailer: Mailer;
  let app: Express;

  before(async () => {
    smtp = await startSmtpServer();
    mailer = createMailer({ smtpUrl: smtp.url, from: 'Chat <no-reply@chat.test>', dataDir: '.', logger: pino({ level: 'silent' }) });
    app = (await getHarness()).appWith({}, { mailer });
  });
  after(async () => {
    await mailer.close();
    await smtp.close();
  });

  async function register(email = uniqueEmail()) {
    const res = await request(app).post('/api/v1/auth/register').send({ email, password: PASSWORD, name: 'Mae' }).expect(201);
    return { email, body: res.body };
  }

  it('sign-up mails a verification link that verifies the address, once', async () => {
    const { email, body } = await register();
    expect(body.user.email_verified).to.equal(false);
    const mail = await smtp.waitFor(email, /Confirm your e-mail/);
    expect(mail.text).to.contain('http://app.test/verify-email?token=');
    const token = tokenFromMail(mail);
    const res = await request(app).post('/api/v1/auth/verify-email').send({ token }).expect(200);
    expect(res.body).to.deep.equal({ user_id: body.user.id, email_verified: true });
    const { database } = await getHarness();
    const user = await database.asSystem((trx) => trx.selectFrom('users').select('email_verified_at').where('id', '=', body.user.id).executeTakeFirstOrThrow());
    expect(user.email_verified_at).to.be.instanceOf(Date);
    expectProblem(await request(app).post('/api/v1/auth/verify-email').send({ token }), 400, 'ERR_INVALID_TOKEN');
  });

  it('a verification link past its 24 hours is refused', async () => {
    const { email } = await register();
    const token = tokenFromMail(await smtp.waitFor(email, /Confirm your e-mail/));
    const { database } = await getHarness();
    await database.asSystem((trx) =>
      trx.updateTable('mail_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('token_hash', '=', hashOpaqueToken(token)).execute(),
    );
    expectProblem(await request(app).post('/api/v1/auth/verify-email').send({ token }), 400, 'ERR_INVALID_TOKEN');
  });

  it('forgot-password answers the same for known and unknown addresses, and mails only the known', async () => {
    const { email } = await register();
    const unknown = uniqueEmail('nobody');
    // The unknown address first: the known one's mail, sent after it, is the sentinel.
    const none = await request(app).post('/api/v1/auth/forgot-password').send({ email: unknown });
    const known = await request(app).post('/api/v1/auth/forgot-password').send({ email });
    expect(known.status).to.equal(202);
    expect(none.status).to.equal(202);
    expect(known.body).to.deep.equal(none.body);
    await smtp.waitFor(email, /Reset your password/);
    expect(smtp.received.some((m) => m.to.includes(unknown))).to.equal(false);
  });

  it('the reset link sets a new password, once, and ends every login of the user', async () => {
    const { email, body } = await register();
    await request(app).post('/api/v1/auth/forgot-password').send({ email }).expect(202);
    const token = tokenFromMail(await smtp.waitFor(email, /Reset your password/));
    const newPassword = 'a brand new passphrase';
    await request(app).post('/api/v1/auth/reset-password').send({ token, password: newPassword }).expect(200, { password_reset: true });
    expectProblem(await request(app).post('/api/v1/auth/refresh').send({ refresh_token: body.refresh_token }), 401, 'ERR_INVALID_REFRESH_TOKEN');
    expectProblem(await request(app).get(`/api/v1/tenants/${body.tenant.id}`).set('Authorization', `Bearer ${body.access_token}`), 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(app).post('/api/v1/auth/login').send({ email, password: PASSWORD }), 401, 'ERR_UNAUTHENTICATED');
    await request(app).post('/api/v1/auth/login').send({ email, password: newPassword }).expect(200);
    expectProblem(await request(app).post('/api/v1/auth/reset-password').send({ token, password: 'yet another passphrase' }), 400, 'ERR_INVALID_TOKEN');
  });

  it('a reset with a password too short keeps the link usable', async () => {
    const { email } = await register();
    await request(app).post('/api/v1/auth/forgot-password').send({ email }).expect(202);
    const token = tokenFromMail(await smtp.waitFor(email, /Reset your password/));
    expectProblem(await request(app).post('/api/v1/auth/reset-password').send({ token, password: 'short' }), 400, 'ERR_VALIDATION');
    await request(app).post('/api/v1/auth/reset-password').send({ token, password: 'long enough now' }).expect(200);
  });

  it('an invitation mail lets a new person set up an account and join, once', async () => {
    const t = await createTenant({ name: 'Invite Co' });
    const email = uniqueEmail('invitee');
    const added = await request(app).post(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${t.owner.accessToken}`).send({ email, role: 'agent' });
    expect(added.status).to.equal(201);
    expect(added.body).to.include({ email, role: 'agent', seat: 'full', status: 'invited' });
    const mail = await smtp.waitFor(email, /invited to Invite Co/);
    const token = tokenFromMail(mail);
    // Without an account, name and password are needed; the link survives the failed attempt.
    const missing = expectProblem(await request(app).post('/api/v1/auth/accept-invitation').send({ token }), 400, 'ERR_VALIDATION');
    expect(missing.errors.map((e: { path: string }) => e.path).sort()).to.deep.equal(['/body/name', '/body/password']);
    const joined = await request(app).post('/api/v1/auth/accept-invitation').send({ token, name: 'Ina', password: PASSWORD }).expect(200);
    expect(joined.body.token_type).to.equal('Bearer');
    const me = await request(app).get(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${joined.body.access_token}`).expect(200);
    expect(me.body.data.find((m: { email: string }) => m.email === email)).to.include({ status: 'active', name: 'Ina' });
    expectProblem(await request(app).post('/api/v1/auth/accept-invitation').send({ token, name: 'X', password: PASSWORD }), 400, 'ERR_INVALID_TOKEN');
    await request(app).post('/api/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
  });

  it('an invitation withdrawn before it is accepted no longer works', async () => {
    const t = await createTenant();
    const email = uniqueEmail('withdrawn');
    const added = await request(app).post(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${t.owner.accessToken}`).send({ email, role: 'agent' }).expect(201);
    const token = tokenFromMail(await smtp.waitFor(email, /invited/));
    await request(app).delete(`/api/v1/tenants/${t.tenantId}/members/${added.body.user_id}`).set('Authorization', `Bearer ${t.owner.accessToken}`).expect(200);
    expectProblem(await request(app).post('/api/v1/auth/accept-invitation').send({ token, name: 'W', password: PASSWORD }), 400, 'ERR_INVALID_TOKEN');
  });

  it('a person who already has an account joins at once and is told by mail', async () => {
    const existing = await register();
    const t = await createTenant({ name: 'Second Home' });
    const added = await request(app).post(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${t.owner.accessToken}`).send({ email: existing.email.toUpperCase(), role: 'admin', seat: 'lite' }).expect(201);
    expect(added.body).to.include({ user_id: existing.body.user.id, role: 'admin', seat: 'lite', status: 'active' });
    await smtp.waitFor(existing.email, /access to Second Home/);
  });
});

describe('mail without SMTP_URL', () => {
  it('is written as .eml under DATA_DIR/mail and its link logged', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'chat-mail-'));
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    try {
      const mailer = createMailer({ from: 'Chat <no-reply@chat.test>', dataDir, logger });
      await mailer.send({ to: 'x@example.test', subject: 'Hello', text: 'Open http://app.test/verify-email?token=abc\n', link: 'http://app.test/verify-email?token=abc' });
      const files = await readdir(join(dataDir, 'mail'));
      expect(files).to.have.length(1);
      const eml = await readFile(join(dataDir, 'mail', files[0]!), 'utf8');
      expect(eml).to.contain('To: x@example.test').and.contain('Subject: Hello').and.contain('token=abc');
      expect(lines.join('')).to.contain('http://app.test/verify-email?token=abc');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
