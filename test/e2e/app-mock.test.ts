import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { type Browsing, errorsOf, openBrowser } from '../support/browser.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const WAIT = { timeout: 15_000 };

async function freePort(): Promise<number> {
  const server = createNetServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

// What `npm run mock` and `npm run app:dev` give a frontend developer: the app's sources served by Vite,
// /api proxied to Prism on the contract. Every screen renders from the contract's examples alone, with
// no error in the console.
describe('the team app against the mock (npm run app:dev)', function () {
  this.timeout(120_000);
  let mock: ChildProcess;
  let vite: ViteDevServer;
  let url: string;
  let browsing: Browsing;

  before(async () => {
    const mockPort = await freePort();
    mock = spawn(process.execPath, [join(ROOT, 'scripts', 'mock.ts'), '--port', String(mockPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      mock.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('Prism is listening')) resolve();
      });
      mock.once('exit', (code) => reject(new Error(`the mock exited (${code}): ${seen.slice(-500)}`)));
    });
    mock.stdout!.resume();
    process.env.VITE_API_URL = `http://127.0.0.1:${mockPort}`;
    process.env.VITE_LIVE = 'off';
    vite = await createServer({ configFile: join(ROOT, 'app', 'vite.config.ts'), logLevel: 'warn', server: { port: await freePort(), strictPort: true } });
    await vite.listen();
    url = vite.resolvedUrls!.local[0]!;
    browsing = await openBrowser();
  });
  after(async () => {
    await browsing?.close();
    await vite?.close();
    delete process.env.VITE_API_URL;
    delete process.env.VITE_LIVE;
    if (mock && mock.exitCode === null) {
      mock.kill('SIGTERM');
      await once(mock, 'exit');
    }
  });

  it('every screen renders from the contract\'s examples with no console error', async () => {
    const page: Page = await browsing.context.newPage();
    const errors = errorsOf(page);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Log in to your inbox' }).waitFor(WAIT);
    await page.getByLabel('E-mail').fill('ada@example.com');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'Live updates are off' }).waitFor({ state: 'attached', ...WAIT });
    for (const view of ['Mine', 'Unassigned', 'All assigned', 'Snoozed', 'Closed']) {
      await page.getByRole('link', { name: new RegExp(`^${view}`) }).click();
      await page.getByRole('heading', { name: view }).waitFor(WAIT);
      await page.locator('.list').getByText(/Order 1234|Nothing here right now/).first().waitFor(WAIT);
    }
    await page.getByRole('link', { name: /^Mine/ }).click();
    await page.locator('.conversations li', { hasText: 'Order 1234' }).getByRole('link').click();
    await page.getByRole('heading', { name: 'Order 1234' }).waitFor(WAIT);
    await page.locator('.messages li', { hasText: 'It ships tomorrow.' }).waitFor(WAIT);
    await page.getByRole('complementary', { name: 'Visitor' }).getByRole('heading', { name: 'Current page' }).waitFor(WAIT);
    await page.locator('.current-page', { hasText: 'Pricing' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Transfer…' }).click();
    await page.getByLabel('Transfer to').waitFor(WAIT);
    await page.getByRole('combobox', { name: 'Reply to the visitor' }).fill('/');
    await page.getByRole('listbox', { name: 'Canned responses' }).waitFor(WAIT);
    // Labels on the conversation, the list's label filter, and the search with its marked words.
    await page.getByLabel('Add a label').locator('option', { hasText: 'billing' }).waitFor({ state: 'attached', ...WAIT });
    await page.getByRole('button', { name: 'Snooze until…' }).click();
    await page.getByRole('group', { name: 'Snooze until' }).waitFor(WAIT);
    await page.getByLabel('Label', { exact: true }).selectOption({ label: 'vip' });
    await page.locator('.list').getByText(/Order 1234|Nothing here right now/).first().waitFor(WAIT);
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('order');
    const found = page.getByRole('list', { name: 'Search results' });
    await found.locator('mark', { hasText: 'order' }).first().waitFor(WAIT);
    await found.getByRole('link', { name: /Refund/ }).waitFor(WAIT);
    expect(errors).to.deep.equal([]);
  });

  it('the guide, the settings and the pages behind the mail links render from the examples with no console error', async () => {
    // The contract's example token carries no claims: the login here names the example team's owner,
    // so that the screens only owners and admins see render too.
    const team = (await (await fetch(`${process.env.VITE_API_URL}/api/v1/team/members`, { headers: { Authorization: 'Bearer x' } })).json()) as { data: { user_id: string; role: string }[] };
    const owner = team.data.find((m) => m.role === 'owner') ?? team.data[0]!;
    const claims = Buffer.from(JSON.stringify({ sub: owner.user_id, tid: 'tn_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a56' })).toString('base64url');
    const page: Page = await browsing.context.newPage();
    const errors = errorsOf(page);
    await page.route(/\/api\/v1\/auth\/(login|refresh)$/, async (route) => {
      const answer = await route.fetch();
      const body = (await answer.json()) as Record<string, unknown>;
      await route.fulfill({ response: answer, json: { ...body, access_token: `eyJhbGciOiJIUzI1NiJ9.${claims}.c2lnbmF0dXJl` } });
    });
    for (const [path, heading] of [
      ['signup', 'Create your workspace'],
      ['forgot-password', 'Forgot your password?'],
      ['verify-email?token=abc', 'Confirm your e-mail address'],
      ['reset-password?token=abc', 'Set a new password'],
      ['accept-invitation?token=abc', 'Join your team'],
    ] as const) {
      await page.goto(new URL(path, url).href);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor(WAIT);
    }
    await page.goto(url);
    await page.getByLabel('E-mail').fill('ada@example.com');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    // The owner belongs to some of the example departments: each is a view under "My departments", and opens.
    const departments = (await (await fetch(`${process.env.VITE_API_URL}/api/v1/departments`, { headers: { Authorization: 'Bearer x' } })).json()) as { data: { name: string; member_ids: string[] }[] };
    const own = departments.data.filter((d) => d.member_ids.includes(owner.user_id));
    expect(own.length).to.be.greaterThan(0);
    expect(own.length).to.be.lessThan(departments.data.length);
    const myDepartments = page.getByRole('navigation', { name: 'Conversation views' }).getByRole('list', { name: 'My departments' });
    await myDepartments.waitFor(WAIT);
    expect(await myDepartments.getByRole('link').count()).to.equal(own.length);
    for (const department of own) {
      await myDepartments.getByRole('link', { name: new RegExp(`^${department.name}`) }).click();
      await page.getByRole('heading', { name: department.name, exact: true }).waitFor(WAIT);
      await page.locator('.list').getByText(/Order 1234|Nothing here right now/).first().waitFor(WAIT);
    }
    for (const [path, heading] of [
      ['setup/workspace', 'Name your workspace'],
      ['setup/widget', 'Make your chat bubble'],
      ['setup/install', 'Put the bubble on your website'],
    ] as const) {
      await page.goto(new URL(path, url).href);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor(WAIT);
    }
    await page.frameLocator('iframe[title="Preview of your chat bubble"]').locator('chat-widget .bubble').waitFor({ state: 'attached', ...WAIT }).catch(() => undefined);
    await page.goto(new URL('settings/team', url).href);
    for (const section of ['Team', 'Widgets', 'Canned responses', 'Labels', 'API keys', 'Webhooks', 'Workflows', 'Bots', 'Billing']) {
      await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: section }).click();
      await page.getByRole('heading', { level: 1, name: section }).waitFor(WAIT);
      await page.getByRole('status').filter({ hasText: 'Loading…' }).waitFor({ state: 'detached', ...WAIT });
    }
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: /^Manage/ }).first().click();
    await page.getByRole('region', { name: 'Delivery log' }).waitFor(WAIT);
    // A stored workflow and a stored bot open in their forms, every condition and action of the examples in its fields.
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Workflows' }).click();
    await page.getByRole('button', { name: /^Edit / }).first().click();
    await page.getByRole('form', { name: /^Edit / }).getByRole('group', { name: 'Action 1' }).waitFor(WAIT);
    // Its runs, each with what its actions did.
    await page.getByRole('button', { name: /^Runs of / }).first().click();
    await page.getByRole('table', { name: 'Runs' }).getByRole('row').nth(1).waitFor(WAIT);
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Bots' }).click();
    await page.getByRole('button', { name: /^Settings of / }).first().click();
    await page.getByRole('form', { name: /^Settings of / }).getByRole('button', { name: 'Save bot' }).waitFor(WAIT);
    // Reports: the summary's figures and the charts from the examples.
    await page.goto(new URL('reports', url).href);
    await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor(WAIT);
    await page.getByRole('figure', { name: 'How soon the first response came' }).getByRole('table').waitFor(WAIT);
    await page.getByRole('figure', { name: 'Conversations per day' }).locator('rect.bar').nth(2).waitFor(WAIT);
    await page.locator('.figures dd', { hasText: '412' }).waitFor(WAIT);
    expect(errors).to.deep.equal([]);
  });
});
