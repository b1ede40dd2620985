import { AxeBuilder } from '@axe-core/playwright';
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { appendMessage } from '../../src/conversations/message.service.ts';
import { inTenantTransaction } from '../../src/events/outbox.ts';
import { type Browsing, errorsOf, openBrowser } from '../support/browser.ts';
import { addMember, createConversation, createTenant, PASSWORD, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { shoot, shootBoth } from '../support/screenshots.ts';

const WAIT = { timeout: 15_000 };
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
/** A calendar day in UTC (the test tenant's time zone), `days` from today. */
const utcDay = (days = 0) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

// Issue 44 in the team app, against the real service and its socket, in chromium: reports with their
// charts and tables and the CSV, labels made in the settings and put on a conversation and filtered by,
// a conversation snoozed out of the inbox into Snoozed and back, a search by a word of a message.
describe('the team app: reports, labels, snooze and search in a browser', function () {
  this.timeout(180_000);
  let rt: RealtimeServer;
  let api: string;
  const open: Browsing[] = [];

  before(async () => {
    rt = await startRealtime();
    api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
  });
  after(async () => {
    await rt?.close();
  });

  async function signedIn(email: string) {
    const b = await openBrowser();
    open.push(b);
    const page = await b.context.newPage();
    const errors = errorsOf(page);
    await page.goto(`${api}/app/`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    await page.locator('.connection[data-state="live"]').waitFor({ state: 'attached', ...WAIT });
    return { page, errors };
  }

  async function noSeriousViolation(page: Page, screen: string) {
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious.map((v) => `${screen}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).to.deep.equal([]);
  }

  /** A visitor's message, written as the widget's would be (in the writing transaction, on the app's bus: live). */
  async function visitorSays(t: TestTenant, conversationId: string, content: string) {
    const { database } = await getHarness();
    await inTenantTransaction(database, rt.bus, t.tenantId, (trx, emit) =>
      appendMessage(trx, emit, { id: conversationId, tenant_id: t.tenantId }, { sender_type: 'visitor', sender_id: null, type: 'text', content }, new Date()),
    );
  }

  const as = (t: TestTenant) => ({
    post: (path: string) => request(rt.app).post(path).set(bearer(t.owner.accessToken)),
    get: (path: string) => request(rt.app).get(path).set(bearer(t.owner.accessToken)),
  });

  /** An unassigned conversation the visitor started with `text`. */
  async function waiting(t: TestTenant, subject: string, text: string) {
    const c = await createConversation(t, { subject }, t.owner.accessToken, rt.app);
    await visitorSays(t, c.id, text);
    return c as { id: string };
  }

  const row = (page: Page, subject: string) => page.locator('.conversations li', { hasText: subject });

  it('reports: conversations answered and closed show as figures, charts with their tables, and a CSV; an agent sees no Reports', async () => {
    const t = await createTenant({ timezone: 'UTC' });
    const agent = await addMember(t, { role: 'agent' });
    for (const [i, subject] of ['Tent poles', 'Sleeping bags', 'Stove fuel'].entries()) {
      const c = await waiting(t, subject, `Question ${i} about ${subject}`);
      await as(t).post('/api/v1/messages').send({ conversation_id: c.id, content: 'Happy to help!' }).expect(201);
      if (i < 2) await as(t).post(`/api/v1/conversations/${c.id}/close`).expect(200);
    }
    const { page, errors } = await signedIn(t.owner.email);
    await page.getByRole('banner').getByRole('link', { name: 'Reports' }).click();
    await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor(WAIT);
    // The range in the tenant's days (UTC), whatever the browser's time zone.
    await page.getByLabel('To', { exact: true }).fill(utcDay(1));
    await page.getByLabel('From', { exact: true }).fill(utcDay(-6));
    const figure = (name: string) => page.locator('.figures > div', { has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) }).locator('dd');
    await figure('Conversations').filter({ hasText: /^3$/ }).waitFor(WAIT);
    expect(await figure('First response, median').textContent()).to.match(/\d+ (s|min)/);
    expect(await figure('Resolution, median').textContent()).to.match(/\d+ (s|min)/);
    const times = page.getByRole('table', { name: /^Times/ });
    expect(await times.getByRole('row', { name: /^First response/ }).getByRole('cell').first().textContent()).to.equal('3');
    expect(await times.getByRole('row', { name: /^Resolution/ }).getByRole('cell').first().textContent()).to.equal('2');

    // Each chart is an image with a text alternative, and its figures are in a table.
    const buckets = page.getByRole('figure', { name: 'How soon the first response came' });
    expect(await buckets.getByRole('img').getAttribute('aria-label')).to.match(/3 first responses/);
    expect(await buckets.locator('rect.bar').count()).to.equal(6);
    const bucketCounts = await buckets.getByRole('table').locator('tbody td').allTextContents();
    expect(bucketCounts.reduce((n, c) => n + Number(c), 0)).to.equal(3);
    const daily = page.getByRole('figure', { name: 'Conversations per day' });
    expect(await daily.locator('rect.bar').count()).to.equal(8);
    await daily.getByText('The figures as a table').click();
    await daily.getByRole('row', { name: /\b3$/ }).waitFor(WAIT);
    await page.getByRole('figure', { name: 'First response time per day (median)' }).locator('circle.point').first().waitFor(WAIT);
    await noSeriousViolation(page, 'reports');
    await page.getByRole('banner').scrollIntoViewIfNeeded();
    await shootBoth(page, 'app-reports', { docs: true });
    await shoot(page, 'app-reports-full', { fullPage: true });

    // Narrowed to the agent: no response of theirs yet.
    await page.getByLabel('Agent').selectOption(agent.userId);
    await page.getByRole('table', { name: /^Times/ }).getByRole('row', { name: /^First response/ }).getByRole('cell').first().filter({ hasText: /^0$/ }).waitFor(WAIT);
    await page.getByLabel('Agent').selectOption('');

    // The CSV, fetched with the login and saved as a file.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the summary (CSV)' }).click()]);
    expect(download.suggestedFilename()).to.match(/^report-summary-.+\.csv$/);
    const csv = await readFile((await download.path())!, 'utf8');
    expect(csv).to.match(/^metric,count/).and.contain('first_response,3');

    // A range that ends before it starts is said at once.
    await page.getByLabel('From', { exact: true }).fill(utcDay(3));
    await page.getByRole('alert').filter({ hasText: 'The last day comes before the first.' }).waitFor(WAIT);
    expect(errors).to.deep.equal([]);

    // An agent: no Reports link, and its address leads back to the inbox.
    const { page: agentPage, errors: agentErrors } = await signedIn(agent.email);
    expect(await agentPage.getByRole('banner').getByRole('link', { name: 'Reports' }).count()).to.equal(0);
    await agentPage.goto(`${api}/app/reports`);
    await agentPage.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    expect(agentPage.url()).to.equal(`${api}/app/inbox/mine`);
    expect(agentErrors).to.deep.equal([]);
  });

  it('labels: made, renamed, recoloured and deleted in the settings; put on a conversation as a chip, shown in the list, filtered by, taken off', async () => {
    const t = await createTenant({ timezone: 'UTC' });
    await waiting(t, 'Invoice copy', 'Can I get a copy of my invoice?');
    await waiting(t, 'Broken zip', 'The zip of my tent broke');
    const { page, errors } = await signedIn(t.owner.email);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Labels' }).click();
    await page.getByRole('heading', { level: 1, name: 'Labels' }).waitFor(WAIT);
    const form = page.getByRole('form', { name: 'New label' });
    await form.getByLabel('Label name').fill('billing,');
    await form.getByRole('button', { name: 'Add label' }).click();
    await form.locator('.field-error').first().waitFor(WAIT);
    await form.getByLabel('Label name').fill('billing');
    await form.getByLabel('Description').fill('Invoices and refunds');
    await form.getByRole('button', { name: 'Add label' }).click();
    await page.getByRole('listitem', { name: 'billing' }).waitFor(WAIT);
    await form.getByLabel('Label name').fill('temporary');
    await form.getByRole('button', { name: 'Add label' }).click();
    const temporary = page.getByRole('listitem', { name: 'temporary' });
    await temporary.getByRole('button', { name: 'Edit temporary' }).click();
    await temporary.getByLabel('Label name').fill('warranty');
    await temporary.getByLabel('Colour').fill('#2ca02c');
    await temporary.getByRole('button', { name: 'Save' }).click();
    const warranty = page.getByRole('listitem', { name: 'warranty' });
    await warranty.getByText('#2ca02c').waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'Loading…' }).waitFor({ state: 'detached', ...WAIT });
    await noSeriousViolation(page, 'settings: labels');
    await shootBoth(page, 'settings-labels', { docs: true });
    await form.getByLabel('Label name').fill('spam');
    await form.getByRole('button', { name: 'Add label' }).click();
    await page.getByRole('listitem', { name: 'spam' }).getByRole('button', { name: 'Delete spam' }).click();
    await page.getByRole('listitem', { name: 'spam' }).waitFor({ state: 'detached', ...WAIT });
    const stored = (await as(t).get('/api/v1/labels').expect(200)).body.data as { name: string; color: string }[];
    expect(stored.map((l) => [l.name, l.color])).to.deep.include(['warranty', '#2ca02c']);
    expect(stored.map((l) => l.name).sort()).to.deep.equal(['billing', 'warranty']);

    // On a conversation: added from its pane, a chip there and in the list.
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    await page.getByRole('link', { name: /^Unassigned/ }).click();
    await row(page, 'Invoice copy').getByRole('link').click();
    await page.getByRole('heading', { name: 'Invoice copy' }).waitFor(WAIT);
    await page.getByLabel('Add a label').selectOption({ label: 'billing' });
    const chips = page.getByRole('list', { name: 'Labels' });
    await chips.getByRole('listitem').filter({ hasText: 'billing' }).waitFor(WAIT);
    await row(page, 'Invoice copy').locator('.label-chip', { hasText: 'billing' }).waitFor(WAIT);
    // Its subject and priority, changed from the pane.
    await page.getByRole('button', { name: 'Edit subject' }).click();
    await page.getByRole('form', { name: 'Subject' }).getByLabel('Subject').fill('Invoice copy for March');
    await page.getByRole('button', { name: 'Save subject' }).click();
    await page.getByRole('heading', { name: 'Invoice copy for March' }).waitFor(WAIT);
    await page.getByLabel('Priority').selectOption('high');
    await page.locator('.conversation .status', { hasText: 'high priority' }).waitFor(WAIT);
    await row(page, 'Invoice copy for March').locator('.priority', { hasText: 'high' }).waitFor(WAIT);
    const changed = (await as(t).get('/api/v1/conversations?status=open').expect(200)).body.data.find((c: { subject: string }) => c.subject === 'Invoice copy for March');
    expect(changed).to.deep.include({ priority: 'high' });
    await noSeriousViolation(page, 'a conversation with labels');
    await shootBoth(page, 'app-labels', { docs: true });

    // The list filtered by the label: only the labelled conversation.
    await page.getByLabel('Label', { exact: true }).selectOption({ label: 'billing' });
    await row(page, 'Broken zip').waitFor({ state: 'detached', ...WAIT });
    await row(page, 'Invoice copy').waitFor(WAIT);
    expect(await page.locator('.conversations li').count()).to.equal(1);
    expect(page.url()).to.match(/\?label=lbl_/);
    // Taken off: it leaves the filtered list at once.
    await page.getByRole('button', { name: 'Remove label billing' }).click();
    await chips.waitFor({ state: 'detached', ...WAIT });
    await page.getByText('Nothing here right now.').waitFor(WAIT);
    await page.getByLabel('Label', { exact: true }).selectOption('');
    await row(page, 'Broken zip').waitFor(WAIT);
    expect(errors.filter((e) => !/status of 400/.test(e))).to.deep.equal([]);
  });

  it('snooze: out of the inbox into Snoozed, back with Unsnooze; a snooze made elsewhere shows live', async () => {
    const t = await createTenant({ timezone: 'UTC' });
    await waiting(t, 'Call me tomorrow', 'Please call me back tomorrow');
    const other = await waiting(t, 'Waiting for photos', 'I will send photos later');
    const { page, errors } = await signedIn(t.owner.email);
    await page.getByRole('link', { name: /^Unassigned/ }).click();
    await row(page, 'Call me tomorrow').getByRole('link').click();
    await page.getByRole('heading', { name: 'Call me tomorrow' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Snooze until…' }).click();
    const choices = page.getByRole('group', { name: 'Snooze until' });
    expect(await choices.getByRole('button').allTextContents()).to.deep.equal(['1 hour', 'Tomorrow 9:00', 'Next week', 'Until the visitor replies']);
    await noSeriousViolation(page, 'snooze choices');
    await choices.getByRole('button', { name: 'Tomorrow 9:00' }).click();
    await page.locator('.status .snoozed', { hasText: /Snoozed until/ }).waitFor(WAIT);
    await row(page, 'Call me tomorrow').waitFor({ state: 'detached', ...WAIT });

    await page.getByRole('navigation', { name: 'Conversation views' }).getByRole('link', { name: /^Snoozed/ }).click();
    await page.getByRole('heading', { name: 'Snoozed', level: 2 }).waitFor(WAIT);
    await row(page, 'Call me tomorrow').locator('.snoozed', { hasText: /^snoozed until / }).waitFor(WAIT);
    // Snoozed elsewhere (the API, another member): it comes into this view live.
    await as(t).post(`/api/v1/conversations/${other.id}/snooze`).send({ until_reply: true }).expect(200);
    await row(page, 'Waiting for photos').locator('.snoozed', { hasText: 'snoozed until a reply' }).waitFor(WAIT);
    await noSeriousViolation(page, 'snoozed');
    await shootBoth(page, 'app-snoozed', { docs: true });

    await row(page, 'Call me tomorrow').getByRole('link').click();
    await page.getByRole('button', { name: 'Unsnooze' }).click();
    await page.getByRole('button', { name: 'Snooze until…' }).waitFor(WAIT);
    await row(page, 'Call me tomorrow').waitFor({ state: 'detached', ...WAIT });
    // The visitor writes: the snooze "until they reply" ends, live.
    await visitorSays(t, other.id, 'Here are the photos');
    await row(page, 'Waiting for photos').waitFor({ state: 'detached', ...WAIT });
    await page.getByRole('navigation', { name: 'Conversation views' }).getByRole('link', { name: /^Unassigned/ }).click();
    await row(page, 'Call me tomorrow').waitFor(WAIT);
    await row(page, 'Waiting for photos').waitFor(WAIT);
    expect(errors).to.deep.equal([]);
  });

  it('search: "/" focuses the box, a word of a message finds its conversation with the word marked (the message shown as text, never as HTML), and opens it', async () => {
    const t = await createTenant({ timezone: 'UTC' });
    await waiting(t, 'Stove question', 'Does the <img src=x onerror=alert(1)> & zeppelin stove burn paraffin?');
    await waiting(t, 'Other thing', 'Where is my parcel?');
    const { page, errors } = await signedIn(t.owner.email);
    await page.getByText('Choose a conversation.').click();
    await page.keyboard.press('/');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).to.equal('search-input');
    await page.keyboard.type('zeppelin');
    const results = page.getByRole('list', { name: 'Search results' });
    const found = results.getByRole('listitem').filter({ hasText: 'Stove question' });
    await found.waitFor(WAIT);
    expect(await results.getByRole('listitem').count()).to.equal(1);
    expect(await found.locator('mark').allTextContents()).to.deep.equal(['zeppelin']);
    expect(await found.locator('.snippet').textContent()).to.contain('<img src=x onerror=alert(1)> & zeppelin');
    expect(await found.locator('img').count()).to.equal(0);
    await noSeriousViolation(page, 'search results');
    await shootBoth(page, 'app-search', { docs: true });
    await found.getByRole('link').click();
    await page.getByRole('heading', { name: 'Stove question' }).waitFor(WAIT);
    // Escape empties the box: the view's list is back.
    await page.getByRole('searchbox', { name: 'Search conversations' }).press('Escape');
    await page.getByRole('heading', { level: 2, name: 'Mine' }).waitFor(WAIT);
    expect(errors).to.deep.equal([]);
  });
});
