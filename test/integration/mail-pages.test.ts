import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import pino from 'pino';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { hashOpaqueToken } from '../../src/auth/tokens.ts';
import { createMailer, type Mailer } from '../../src/mail/mailer.ts';
import { createTenant, PASSWORD, uniqueEmail } from '../support/factories.ts';
import { getHarness, TEST_CONFIG } from '../support/harness.ts';
import { openPagesBrowser, type PagesBrowser } from '../support/pages-browser.ts';
import { startSmtpServer } from '../support/smtp.ts';

// The pages behind the mail links, when APP_URL is the service itself: a real browser opens the link
// from the mail that a real SMTP server received, fills the form as a person would (by the fields'
// labels and the buttons' names), and the test checks the outcome in the database or through the API.
describe('mail-link pages in a browser', function () {
  this.timeout(30_000);
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let mailer: Mailer;
  let server: Server;
  let base: string;
  let browser: PagesBrowser;

  before(async () => {
    smtp = await startSmtpServer();
    mailer = createMailer({ smtpUrl: smtp.url, from: 'Chat <no-reply@chat.test>', dataDir: '.', logger: pino({ level: 'silent' }) });
    // The port is known only once listening, and the app's APP_URL must be it: the handler comes second.
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const app = (await getHarness()).appWith({}, { mailer, config: { ...TEST_CONFIG, appUrl: base } });
    server.on('request', app);
    browser = await openPagesBrowser();
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await mailer?.close();
    await smtp?.close();
  });
  afterEach(() => {
    expect(browser.external, 'requests that left loopback').to.deep.equal([]);
  });

  const linkIn = async (to: string, subject: RegExp, path: string): Promise<string> => {
    const mail = await smtp.waitFor(to, subject);
    const link = new RegExp(`${base.replaceAll('.', '\\.')}${path}\\?token=[\\w-]+`).exec(mail.text)?.[0];
    expect(link, mail.text).to.be.a('string');
    return link!;
  };
  const open = async (url: string): Promise<Page> => {
    const page = await browser.context.newPage();
    const res = await page.goto(url);
    expect(res?.status()).to.equal(200);
    expect(res?.headers()['referrer-policy']).to.equal('no-referrer');
    return page;
  };
  const status = (page: Page) => page.getByRole('status');
  const register = async () => {
    const email = uniqueEmail();
    const res = await request(server).post('/api/v1/auth/register').send({ email, password: PASSWORD, name: 'Mae' }).expect(201);
    return { email, userId: res.body.user.id as string };
  };
  const verifiedAt = async (userId: string) => {
    const { database } = await getHarness();
    return (await database.asSystem((trx) => trx.selectFrom('users').select('email_verified_at').where('id', '=', userId).executeTakeFirstOrThrow())).email_verified_at;
  };

  it('verify-email: the link from the sign-up mail confirms the address; opened again it says the link is used up', async () => {
    const { email, userId } = await register();
    const link = await linkIn(email, /Confirm your e-mail/, '/verify-email');
    const page = await open(link);
    expect(await page.title()).to.match(/Confirm your e-mail address/);
    // Opening the page alone uses nothing: a mail scanner following the link leaves the token valid.
    expect(await verifiedAt(userId)).to.equal(null);
    await page.getByRole('button', { name: 'Confirm my address' }).click();
    await status(page).getByText('Your e-mail address is confirmed').waitFor();
    expect(await verifiedAt(userId)).to.be.instanceOf(Date);

    const again = await open(link);
    await again.getByRole('button', { name: 'Confirm my address' }).click();
    await status(again).getByText('This link has expired or was already used').waitFor();
    expect(await again.getByRole('button').count()).to.equal(0);
  });

  it('reset-password: the reset link sets the new password; a short one is refused on the field first', async () => {
    const { email } = await register();
    await request(server).post('/api/v1/auth/forgot-password').send({ email }).expect(202);
    const page = await open(await linkIn(email, /Reset your password/, '/reset-password'));
    const password = page.getByLabel('New password');
    await password.fill('short');
    await page.getByRole('button', { name: 'Set password' }).click();
    await status(page).getByText('Please correct the fields marked').waitFor();
    expect(await password.getAttribute('aria-invalid')).to.equal('true');

    await password.fill('a brand new passphrase');
    await page.getByRole('button', { name: 'Set password' }).click();
    await status(page).getByText('Your password is changed').waitFor();
    await request(server).post('/api/v1/auth/login').send({ email, password: 'a brand new passphrase' }).expect(200);
    await request(server).post('/api/v1/auth/login').send({ email, password: PASSWORD }).expect(401);
  });

  it('reset-password: an expired link says so, and the password stays', async () => {
    const { email } = await register();
    await request(server).post('/api/v1/auth/forgot-password').send({ email }).expect(202);
    const link = await linkIn(email, /Reset your password/, '/reset-password');
    const { database } = await getHarness();
    const token = new URL(link).searchParams.get('token')!;
    await database.asSystem((trx) => trx.updateTable('mail_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('token_hash', '=', hashOpaqueToken(token)).execute());
    const page = await open(link);
    await page.getByLabel('New password').fill('another long passphrase');
    await page.getByRole('button', { name: 'Set password' }).click();
    await status(page).getByText('This link has expired or was already used').waitFor();
    await request(server).post('/api/v1/auth/login').send({ email, password: PASSWORD }).expect(200);
  });

  it('accept-invitation: the invited person names themself, chooses a password and joins', async () => {
    const t = await createTenant({ name: 'Pages Co' });
    const email = uniqueEmail('invitee');
    await request(server).post(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${t.owner.accessToken}`).send({ email, role: 'agent' }).expect(201);
    const page = await open(await linkIn(email, /invited to Pages Co/, '/accept-invitation'));
    await page.getByLabel('Your name').fill('Ina Page');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Join the team' }).click();
    await status(page).getByText('You have joined the team').waitFor();
    const login = await request(server).post('/api/v1/auth/login').send({ email, password: PASSWORD, tenant_id: t.tenantId }).expect(200);
    const members = await request(server).get(`/api/v1/tenants/${t.tenantId}/members`).set('Authorization', `Bearer ${login.body.access_token}`).expect(200);
    expect(members.body.data.find((m: { email: string }) => m.email === email)).to.include({ status: 'active', name: 'Ina Page' });
  });

  it('accept-invitation: a token that was never issued gets the same clear message', async () => {
    const page = await open(`${base}/accept-invitation?token=never-issued`);
    await page.getByLabel('Your name').fill('Nobody');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Join the team' }).click();
    await status(page).getByText('This link has expired or was already used').waitFor();
  });

  it('a link without its token shows no form and says the link is incomplete', async () => {
    for (const path of ['/verify-email', '/reset-password', '/accept-invitation']) {
      const page = await open(`${base}${path}`);
      await status(page).getByText('This link is incomplete').waitFor();
      expect(await page.getByRole('button').count(), path).to.equal(0);
    }
  });
});
