import { AxeBuilder } from '@axe-core/playwright';
import { expect } from 'chai';
import request from 'supertest';
import type { Locator, Page } from 'playwright-core';
import { type Browsing, errorsOf, openBrowser } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { addMember, createTenant, PASSWORD, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { FakeStripe, stripeClientOf } from '../support/fake-stripe.ts';
import { shoot, shootBoth } from '../support/screenshots.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';
import pino from 'pino';
import { parsePlans } from '../../src/billing/plans.ts';
import type { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';
import { WorkflowRunner } from '../../src/workflows/workflow.runner.ts';

const WAIT = { timeout: 15_000 };

// The settings screens against the real service, in chromium: each creates, changes and deletes through
// its form; a refused input shows the service's own message beside its field; an agent never reaches the
// admin screens; a webhook endpoint made here receives a test delivery on a loopback receiver.
describe('the team app: settings in a browser', function () {
  this.timeout(180_000);
  let rt: RealtimeServer;
  let api: string;
  let dispatcher: WebhookDispatcher;
  let runner: WorkflowRunner;
  const open: Browsing[] = [];
  /** Tenants whose workflows are deleted after the file: on a shared PostgreSQL, another file's runner would run them. */
  const withWorkflows: string[] = [];
  const receivers: Receiver[] = [];

  before(async () => {
    rt = await startRealtime();
    api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    dispatcher = testDispatcher(await getHarness(), { bus: rt.bus, timeoutMs: 2_000, retryDelaysMs: [100, 200], pollMs: 100 });
    rt.services.webhooks.onDeliveryDue(() => dispatcher.wake());
    dispatcher.start();
    // Workflows run as the service runs them (src/service.ts), on this server's bus.
    const h = await getHarness();
    runner = new WorkflowRunner({ database: h.database, logger: pino({ level: 'silent' }), bus: rt.bus, mailer: h.deps.mailer, conversations: rt.services.conversations, allowPrivate: true, timeoutMs: 2_000, retryDelaysMs: [100, 200], pollMs: 100 });
    runner.start();
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
  });
  after(async () => {
    await dispatcher?.stop();
    await runner?.stop();
    const h = await getHarness();
    if (withWorkflows.length > 0) await h.database.asSystem((trx) => trx.deleteFrom('workflows').where('tenant_id', 'in', withWorkflows).execute());
    // On a shared PostgreSQL database, endpoints left behind would retry towards ports other tests reuse.
    await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', 'like', 'http://127.0.0.1:%/hook').execute());
    for (const r of receivers.splice(0)) await r.close();
    await rt?.close();
  });

  async function signedIn(email: string, password = PASSWORD, at = api) {
    const b = await openBrowser();
    open.push(b);
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: at });
    const page = await b.context.newPage();
    const errors = errorsOf(page);
    await page.goto(`${at}/app/`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    return { page, errors };
  }

  async function screen(page: Page, label: string, shot: string) {
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: label }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'Loading…' }).waitFor({ state: 'detached', ...WAIT });
    await noSeriousViolation(page, label);
    await shoot(page, `settings-${shot}`, { fullPage: true });
    await shootBoth(page, `settings-${shot}`, { docs: true });
  }

  /** axe-core on the page as it is now: a screen when opened, and again once it shows what was made on it (rows, cards, logs, secrets). */
  async function noSeriousViolation(page: Page, state: string) {
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious.map((v) => `${state}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).to.deep.equal([]);
  }

  /** The finding shown beside the field labelled `label` (in `scope`: a form, a group of fields). */
  const findingOf = (scope: Page | Locator, label: string) => {
    const page = 'goto' in scope ? scope : scope.page();
    return scope.locator('.field', { has: page.getByLabel(label, { exact: true }) }).locator('.field-error');
  };
  /** Only the refused inputs' 400s (and the 409 of a refused action) may show in the console. */
  const unexpected = (errors: string[]) => errors.filter((e) => !/status of (400|409)/.test(e));

  it('team: invite, change role and seat, remove; a department made, renamed, given a member and deleted; a refused e-mail said beside its field', async () => {
    const t = await createTenant();
    const agent = await addMember(t, { role: 'agent' });
    const { page, errors } = await signedIn(t.owner.email);
    await page.getByRole('link', { name: 'Settings' }).click();
    await screen(page, 'Team', 'team');

    await page.getByLabel('E-mail', { exact: true }).fill('not-an-address');
    await page.getByRole('button', { name: 'Invite' }).click();
    await findingOf(page, 'E-mail').waitFor(WAIT);
    await noSeriousViolation(page, 'Team, a refused e-mail');
    // An address nobody has: an existing account would join at once, not be invited.
    const invitee = `new.colleague.${t.tenantId.slice(-8)}@example.test`;
    await page.getByLabel('E-mail', { exact: true }).fill(invitee);
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').filter({ hasText: `Invitation sent to ${invitee}` }).waitFor(WAIT);
    const row = page.getByRole('row', { name: invitee });
    await row.getByText('Invited').waitFor(WAIT);

    // Role and seat of an active member; then remove the invited one.
    await page.getByLabel(`Seat of ${agent.email}`).selectOption('lite');
    await eventually(async () => (await memberOf(t, agent.userId)).seat === 'lite', 'the seat to be lite');
    await page.getByLabel(`Role of ${agent.email}`).selectOption('admin');
    await eventually(async () => (await memberOf(t, agent.userId)).role === 'admin', 'the role to be admin');
    await page.getByRole('button', { name: `Remove ${invitee}` }).click();
    await row.waitFor({ state: 'detached', ...WAIT });

    // A department: made, renamed, a member ticked, deleted.
    await page.getByLabel('Department name').fill('Repairs');
    await page.getByRole('button', { name: 'Add department' }).click();
    const dept = page.getByRole('listitem', { name: 'Repairs' });
    await dept.waitFor(WAIT);
    await dept.getByLabel('Name of Repairs').fill('Workshop');
    await dept.getByRole('button', { name: 'Rename' }).click();
    const renamed = page.getByRole('listitem', { name: 'Workshop' });
    await renamed.waitFor(WAIT);
    await renamed.getByRole('checkbox', { name: 'Owner' }).check();
    await renamed.getByRole('checkbox', { name: 'Owner' }).and(page.locator(':checked')).waitFor(WAIT);
    await noSeriousViolation(page, 'Team, with a department');
    await renamed.getByRole('button', { name: 'Delete Workshop' }).click();
    await renamed.waitFor({ state: 'detached', ...WAIT });
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('widgets: created, changed, a domain refused beside its field then allowed and removed, a new identity secret shown once, deleted', async () => {
    const t = await createTenant();
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/widgets`);
    await page.getByRole('heading', { level: 1, name: 'Widgets' }).waitFor(WAIT);
    await page.getByLabel('Widget name').fill('Shop');
    await page.getByLabel('Greeting').fill('Welcome to the shop');
    await page.getByRole('button', { name: 'Create widget' }).click();
    await page.getByRole('heading', { name: 'Allowed domains' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Save widget' }).waitFor(WAIT);
    // The secret the creation answered is shown once, in the snippet too, until dismissed.
    const firstSecret = await page.locator('.shown-once code').textContent();
    expect(firstSecret).to.match(/\S{20,}/);
    expect(await page.locator('.copyable pre', { hasText: 'createHmac' }).textContent()).to.include(firstSecret!);
    await noSeriousViolation(page, 'Widgets, the secret of a widget just made');
    await shoot(page, 'settings-widgets-created-secret', { fullPage: true });
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('.shown-once').waitFor({ state: 'detached', ...WAIT });
    const preview = page.frameLocator('iframe[title="Preview of your chat bubble"]');
    await preview.locator('chat-widget #chat-greeting', { hasText: 'Welcome to the shop' }).waitFor(WAIT);
    await screen(page, 'Widgets', 'widgets');

    await page.getByLabel('Greeting').fill('Welcome back');
    await page.getByRole('button', { name: 'Save widget' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor(WAIT);
    await preview.locator('chat-widget #chat-greeting', { hasText: 'Welcome back' }).waitFor(WAIT);

    await page.getByLabel('Domain', { exact: true }).fill('shop.example.com:8080');
    await page.getByRole('button', { name: 'Allow domain' }).click();
    await findingOf(page, 'Domain').filter({ hasText: 'must be a host name without a port' }).waitFor(WAIT);
    await page.getByLabel('Domain', { exact: true }).fill('shop.example.com');
    await page.getByRole('button', { name: 'Allow domain' }).click();
    await page.getByRole('button', { name: 'Remove shop.example.com' }).click();
    await page.getByRole('button', { name: 'Remove shop.example.com' }).waitFor({ state: 'detached', ...WAIT });

    await page.getByRole('button', { name: 'Make a new secret' }).click();
    const secret = await page.locator('.shown-once code').textContent();
    expect(secret).to.match(/\S{20,}/);
    await page.getByText('It is shown only now').waitFor(WAIT);
    const snippet = await page.locator('.copyable pre', { hasText: 'createHmac' }).textContent();
    expect(snippet).to.include(secret!);
    const widgetId = (await as(t).get('/api/v1/widgets').expect(200)).body.data[0].id as string;
    expect(snippet).to.include(`data-widget-id="${widgetId}"`);
    await noSeriousViolation(page, 'Widgets, a new identity secret');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('checkbox', { name: 'Require verified visitors on this widget' }).check();
    await eventually(async () => (await as(t).get(`/api/v1/widgets/${widgetId}`).expect(200)).body.identity_verification.required === true, 'identity to be required');

    await page.getByRole('button', { name: 'Delete widget' }).click();
    await page.getByRole('button', { name: 'Create widget' }).waitFor(WAIT);
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('API keys: a refused name said beside its field; created and shown once, rotated, revoked; canned responses made, changed, deleted', async () => {
    const t = await createTenant();
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/api-keys`);
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor(WAIT);
    await screen(page, 'API keys', 'api-keys');
    await page.getByLabel('Key name').fill('CRM sync');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('fieldset .field-error').waitFor(WAIT);
    await page.getByRole('checkbox', { name: 'conversations:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('It is shown only now').waitFor(WAIT);
    const key = await page.locator('.shown-once code').textContent();
    const row = page.getByRole('row', { name: /CRM sync/ });
    await row.waitFor(WAIT);
    expect(await row.locator('code').textContent()).to.satisfy((prefix: string) => key!.startsWith(prefix.replace('…', '')));
    await noSeriousViolation(page, 'API keys, a new key shown once');
    await page.getByRole('button', { name: 'Done' }).click();
    // Never used yet; once the key has called the API, its row says when (the list as read again).
    const lastUsed = row.getByRole('cell').nth(3);
    expect(await lastUsed.textContent()).to.equal('never');
    await request(rt.app).get('/api/v1/conversations').set({ 'X-Api-Key': key!, 'X-Tenant-ID': t.tenantId }).expect(200);
    await page.reload();
    await row.waitFor(WAIT);
    expect(await lastUsed.textContent()).to.not.equal('never');
    // Shown once: the key is nowhere on the page read again, only its prefix.
    expect(await page.locator('.shown-once').count()).to.equal(0);
    expect(await page.content()).not.to.include(key!);
    await row.getByRole('button', { name: 'Rotate CRM sync' }).click();
    await page.getByText('It is shown only now').waitFor(WAIT);
    expect(await page.locator('.shown-once code').textContent()).not.to.equal(key);
    await page.getByRole('button', { name: 'Done' }).click();
    await row.getByRole('button', { name: 'Revoke CRM sync' }).click();
    await row.waitFor({ state: 'detached', ...WAIT });

    await screen(page, 'Canned responses', 'canned-responses');
    await page.getByLabel('Shortcut').fill('has spaces!');
    await page.getByLabel('Title').fill('Opening hours');
    await page.getByLabel('Text').fill('We are open 9 to 5.');
    await page.getByRole('button', { name: 'Add canned response' }).click();
    await findingOf(page, 'Shortcut').waitFor(WAIT);
    await page.getByLabel('Shortcut').fill('hours');
    await page.getByRole('button', { name: 'Add canned response' }).click();
    const card = page.getByRole('listitem', { name: '/hours' });
    await card.getByRole('button', { name: 'Edit /hours' }).click();
    await card.getByLabel('Text').fill('We are open 8 to 6.');
    await card.getByRole('button', { name: 'Save' }).click();
    await card.getByText('We are open 8 to 6.').waitFor(WAIT);
    await noSeriousViolation(page, 'Canned responses, with one');
    await card.getByRole('button', { name: 'Delete /hours' }).click();
    await card.waitFor({ state: 'detached', ...WAIT });
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('webhooks: an endpoint made here gets a test delivery on a loopback receiver, the log shows it, redeliver sends it again; disabled, re-enabled, deleted', async () => {
    const t = await createTenant();
    const receiver = await startReceiver();
    receivers.push(receiver);
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/webhooks`);
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor(WAIT);
    await screen(page, 'Webhooks', 'webhooks');
    await page.getByLabel('Endpoint URL').fill('ftp://example.com/hook');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await findingOf(page, 'Endpoint URL').waitFor(WAIT);
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('It is shown only now').waitFor(WAIT);
    receiver.secrets.push((await page.locator('.shown-once code').textContent())!);
    await page.getByRole('button', { name: 'Done' }).click();

    const card = page.getByRole('listitem', { name: receiver.url });
    await card.getByRole('button', { name: 'Send a test event' }).click();
    await receiver.until((r) => r.some((d) => d.verified?.type === 'webhook.test'));
    const log = card.getByRole('region', { name: 'Delivery log' });
    await log.getByRole('row', { name: /webhook\.test succeeded HTTP 200/ }).waitFor(WAIT);
    await noSeriousViolation(page, 'Webhooks, the delivery log');
    await shoot(page, 'settings-webhooks-delivered', { fullPage: true });
    await log.getByRole('button', { name: 'Redeliver' }).click();
    await receiver.until((r) => r.filter((d) => d.verified?.type === 'webhook.test').length === 2);
    await log.getByRole('row', { name: /webhook\.test succeeded HTTP 200 2/ }).waitFor(WAIT);

    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByText('Disabled (disabled by a member)').waitFor(WAIT);
    await noSeriousViolation(page, 'Webhooks, a disabled endpoint');
    await card.getByRole('button', { name: 'Re-enable' }).click();
    await card.getByText('Enabled').waitFor(WAIT);
    await card.getByRole('button', { name: 'Delete endpoint' }).click();
    await card.waitFor({ state: 'detached', ...WAIT });
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('workflows: two conditions and two actions (a label among them) made through the form, a condition refused beside its field, changed, turned off and on, deleted', async () => {
    const t = await createTenant();
    const vip = (await as(t).post('/api/v1/labels').send({ name: 'vip', color: '#ff7f0e' }).expect(201)).body as { id: string };
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/workflows`);
    await page.getByRole('heading', { level: 1, name: 'Workflows' }).waitFor(WAIT);
    const form = page.getByRole('form', { name: 'New workflow' });
    await form.getByLabel('Workflow name').fill('Urgent refunds');
    await form.getByRole('button', { name: 'Add a condition' }).click();
    const first = form.getByRole('group', { name: 'Condition 1' });
    await first.getByLabel('Field', { exact: true }).selectOption('message.content');
    await first.getByLabel('Operator').selectOption('contains');
    await first.getByLabel('Value', { exact: true }).fill('refund');
    await form.getByRole('button', { name: 'Add a condition' }).click();
    const second = form.getByRole('group', { name: 'Condition 2' });
    await second.getByLabel('Field', { exact: true }).selectOption('conversation.priority');
    await second.getByLabel('Operator').selectOption('in');
    await second.getByRole('checkbox', { name: 'high' }).check();
    await second.getByRole('checkbox', { name: 'urgent' }).check();
    await form.getByRole('group', { name: 'Action 1' }).getByLabel('Message').fill('A specialist will answer shortly.');
    await form.getByRole('button', { name: 'Add an action' }).click();
    const labelAction = form.getByRole('group', { name: 'Action 2' });
    await labelAction.getByLabel('Do', { exact: true }).selectOption('add_label');
    await screen(page, 'Workflows', 'workflows');

    // No label chosen: the contract refuses the action's label id, said beside its Label field and only
    // there (not the other kinds of action's findings the validator gives for the oneOf).
    await form.getByRole('button', { name: 'Add workflow' }).click();
    await findingOf(labelAction, 'Label').filter({ hasText: 'must match pattern' }).waitFor(WAIT);
    expect(await labelAction.locator('.field-error').allTextContents()).to.have.length(1);
    await labelAction.getByLabel('Label', { exact: true }).selectOption({ label: 'vip' });
    // A message field needs the message.created trigger: the service says so beside the first condition's field.
    await form.getByRole('button', { name: 'Add workflow' }).click();
    await findingOf(first, 'Field').filter({ hasText: 'message fields need the message.created trigger' }).waitFor(WAIT);
    await form.getByLabel('When').selectOption('message.created');
    await form.getByRole('button', { name: 'Add workflow' }).click();
    const flow = page.getByRole('listitem', { name: 'Urgent refunds' });
    await flow.getByText("If Message's text contains refund and Priority is one of high, urgent → Send a message to the visitor, then Add a label vip").waitFor(WAIT);
    await form.getByRole('group', { name: 'Condition 1' }).waitFor({ state: 'detached', ...WAIT });
    expect(await form.getByLabel('Workflow name').inputValue()).to.equal('');
    await noSeriousViolation(page, 'Workflows, with one');
    const made = await workflowsOf(t);
    expect(made).to.have.length(1);
    expect(made[0]).to.deep.include({
      name: 'Urgent refunds',
      trigger: { type: 'message.created' },
      conditions: [
        { field: 'message.content', operator: 'contains', value: 'refund' },
        { field: 'conversation.priority', operator: 'in', value: ['high', 'urgent'] },
      ],
      actions: [
        { type: 'send_message', content: 'A specialist will answer shortly.' },
        { type: 'add_label', label_id: vip.id },
      ],
    });

    // Changed: renamed, the first condition now about labels, the second removed, a third action moved first.
    await flow.getByRole('button', { name: 'Edit Urgent refunds' }).click();
    const edit = flow.getByRole('form', { name: 'Edit Urgent refunds' });
    await edit.getByLabel('Workflow name').fill('Refunds of non-VIPs');
    const labelled = edit.getByRole('group', { name: 'Condition 1' });
    await labelled.getByLabel('Field', { exact: true }).selectOption('conversation.labels');
    await labelled.getByLabel('Operator').selectOption('not_contains');
    await labelled.getByLabel('Value', { exact: true }).selectOption({ label: 'vip' });
    await edit.getByRole('button', { name: 'Remove condition 2' }).click();
    await edit.getByRole('button', { name: 'Add an action' }).click();
    const third = edit.getByRole('group', { name: 'Action 3' });
    await third.getByLabel('Do', { exact: true }).selectOption('set_priority');
    await third.getByLabel('Priority').selectOption('urgent');
    await edit.getByRole('button', { name: 'Move action 3 up' }).click();
    await edit.getByRole('button', { name: 'Move action 2 up' }).click();
    await edit.getByRole('button', { name: 'Save workflow' }).click();
    const changed = page.getByRole('listitem', { name: 'Refunds of non-VIPs' });
    await changed.getByText('If Labels does not contain vip → Set the priority to urgent, then Send a message to the visitor, then Add a label vip').waitFor(WAIT);
    expect((await workflowsOf(t))[0]).to.deep.include({
      conditions: [{ field: 'conversation.labels', operator: 'not_contains', value: vip.id }],
      actions: [
        { type: 'set_priority', priority: 'urgent' },
        { type: 'send_message', content: 'A specialist will answer shortly.' },
        { type: 'add_label', label_id: vip.id },
      ],
    });

    await changed.getByRole('button', { name: 'Turn off Refunds of non-VIPs' }).click();
    await changed.getByRole('button', { name: 'Turn on Refunds of non-VIPs' }).waitFor(WAIT);
    await changed.getByRole('button', { name: 'Runs of Refunds of non-VIPs' }).click();
    await changed.getByText('No runs yet.').waitFor(WAIT);
    await changed.getByRole('button', { name: 'Delete Refunds of non-VIPs' }).click();
    await changed.waitFor({ state: 'detached', ...WAIT });
    expect(await workflowsOf(t)).to.deep.equal([]);
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it("bots: an faq bot's settings changed through its form (a refused avatar URL said beside its field), a widget handing it its conversations; an llm bot's model changed; a webhook bot's key shown once; billing says self-hosted", async () => {
    const t = await createTenant();
    const widget = (await as(t).post('/api/v1/widgets').send({ name: 'Shop' }).expect(201)).body as { id: string };
    const billing = (await as(t).post('/api/v1/departments').send({ name: 'Billing' }).expect(201)).body as { id: string };
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/bots`);
    await page.getByRole('heading', { level: 1, name: 'Bots' }).waitFor(WAIT);
    const form = page.getByRole('form', { name: 'New bot' });
    await form.getByLabel('Bot name').fill('Helpdesk');
    await form.getByRole('button', { name: 'Add bot' }).click();
    const faq = page.getByRole('listitem', { name: 'Helpdesk' });
    await faq.getByRole('button', { name: 'Settings of Helpdesk' }).click();
    const settings = faq.getByRole('form', { name: 'Settings of Helpdesk' });
    await settings.getByLabel('Bot name').fill('Help desk');
    await settings.getByLabel('Avatar URL').fill('ftp://example.com/helpdesk.png');
    await settings.getByLabel('Hand over to').selectOption({ label: 'Billing' });
    await screen(page, 'Bots', 'bots');
    await settings.getByRole('button', { name: 'Save bot' }).click();
    await findingOf(settings, 'Avatar URL').filter({ hasText: 'must be an http:// or https:// URL' }).waitFor(WAIT);
    await settings.getByLabel('Avatar URL').fill('https://example.com/helpdesk.png');
    await settings.getByRole('button', { name: 'Save bot' }).click();
    const renamed = page.getByRole('listitem', { name: 'Help desk' });
    await renamed.waitFor(WAIT);
    const [stored] = await botsOf(t);
    expect(stored).to.deep.include({ name: 'Help desk', kind: 'faq', avatar_url: 'https://example.com/helpdesk.png', handoff_department_id: billing.id });

    // The widget hands its new conversations to the bot, ticked on the bot's card.
    await renamed.getByRole('group', { name: 'Widgets that hand their conversations to Help desk' }).getByRole('checkbox', { name: 'Shop' }).check();
    await eventually(async () => (await as(t).get(`/api/v1/widgets/${widget.id}`).expect(200)).body.settings.bot_id === stored!.id, 'the widget to hand over to the bot');
    await renamed.getByRole('checkbox', { name: 'Shop' }).and(page.locator(':checked')).waitFor(WAIT);
    await renamed.getByRole('button', { name: 'Turn off Help desk' }).click();
    await renamed.getByRole('button', { name: 'Turn on Help desk' }).waitFor(WAIT);

    // An llm bot: made with its model, then another model and a system prompt; the key stays stored.
    await form.getByLabel('Bot name').fill('Writer');
    await form.getByLabel('Kind').selectOption('llm');
    await form.getByLabel('API base URL').fill('https://llm.example.com/v1');
    await form.getByLabel('Model', { exact: true }).fill('small');
    await form.getByLabel('API key of the model').fill('sk-test');
    await form.getByRole('button', { name: 'Add bot' }).click();
    const llm = page.getByRole('listitem', { name: 'Writer' });
    await llm.getByText('Model small at https://llm.example.com/v1').waitFor(WAIT);
    await llm.getByRole('button', { name: 'Settings of Writer' }).click();
    const llmSettings = llm.getByRole('form', { name: 'Settings of Writer' });
    await llmSettings.getByLabel('Model', { exact: true }).fill('large');
    await llmSettings.getByLabel('System prompt').fill('Be brief.');
    await llmSettings.getByRole('button', { name: 'Save bot' }).click();
    await llm.getByText('Model large at https://llm.example.com/v1').waitFor(WAIT);
    expect((await botsOf(t)).find((b) => b.name === 'Writer')?.llm).to.deep.include({ model: 'large', system_prompt: 'Be brief.', api_key_set: true });

    await form.getByLabel('Bot name').fill('Helper');
    await form.getByLabel('Kind').selectOption('webhook');
    await form.getByLabel('Webhook URL').fill('http://127.0.0.1:9/bot');
    await form.getByRole('button', { name: 'Add bot' }).click();
    await page.getByText('API key of Helper.', { exact: true }).waitFor(WAIT);
    const bot = page.getByRole('listitem', { name: 'Helper' });
    for (const gone of [bot, llm, renamed]) {
      await gone.getByRole('button', { name: /^Delete / }).click();
      await gone.waitFor({ state: 'detached', ...WAIT });
    }
    expect(await botsOf(t)).to.deep.equal([]);

    await screen(page, 'Billing', 'billing');
    await page.getByText('self-hosted without a payment provider').waitFor(WAIT);
    await page.getByText(/^1 of /).first().waitFor(WAIT);
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('webhooks: the URL and events changed through the form, the signing secret rotated (the next delivery signed with the new one); an endpoint the service disabled after days of failures says so and is re-enabled', async () => {
    const t = await createTenant();
    const first = await startReceiver();
    const moved = await startReceiver();
    receivers.push(first, moved);
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/webhooks`);
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor(WAIT);
    const create = page.getByRole('form', { name: 'New endpoint' });
    await create.getByLabel('Endpoint URL').fill(first.url);
    await create.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('It is shown only now').waitFor(WAIT);
    const firstSecret = (await page.locator('.shown-once code').textContent())!;
    await page.getByRole('button', { name: 'Done' }).click();
    const hookOf = async () => (await as(t).get('/api/v1/webhooks').expect(200)).body.data[0] as { id: string; url: string; events: string[]; description: string; enabled: boolean; disabled_reason: string | null };

    // Another URL and two events instead of every one, through the endpoint's own form.
    const edit = page.getByRole('listitem', { name: first.url });
    // A new endpoint's card is open already; otherwise Manage opens it.
    if (!(await edit.getByRole('button', { name: 'Save endpoint' }).isVisible())) await edit.getByRole('button', { name: /^Manage/ }).click();
    await edit.getByLabel('Endpoint URL').fill(moved.url);
    await edit.getByLabel('Description').fill('CRM, new address');
    await edit.getByRole('checkbox', { name: 'Every event' }).uncheck();
    await edit.getByRole('checkbox', { name: 'conversation.created', exact: true }).check();
    await edit.getByRole('checkbox', { name: 'message.created', exact: true }).check();
    await edit.getByRole('button', { name: 'Save endpoint' }).click();
    const card = page.getByRole('listitem', { name: moved.url });
    await card.getByText('Enabled').waitFor(WAIT);
    expect(await hookOf()).to.deep.include({ url: moved.url, description: 'CRM, new address', events: ['conversation.created', 'message.created'] });

    // A new signing secret, shown once; the next delivery verifies with it alone.
    await card.getByRole('button', { name: 'Rotate signing secret' }).click();
    await page.getByText(`Signing secret for ${moved.url}.`, { exact: true }).waitFor(WAIT);
    const rotated = (await page.locator('.shown-once code').textContent())!;
    expect(rotated).to.match(/^whsec_/).and.not.equal(firstSecret);
    await page.getByRole('button', { name: 'Done' }).click();
    moved.secrets.push(rotated);
    await card.getByRole('button', { name: 'Send a test event' }).click();
    await moved.until((r) => r.some((d) => d.verified?.type === 'webhook.test' && d.verifiedBy.includes(rotated)));
    expect(first.received).to.deep.equal([]);

    // Disabled by failures as the service does it: an endpoint failing for five days (its streak's start
    // put five days and a minute back, where days of failed deliveries would have put it) that fails once
    // more is disabled by the dispatcher, and the owners are mailed.
    const { id } = await hookOf();
    // The delivery recorded first (a success ends a failing streak).
    await eventually(async () => ((await as(t).get(`/api/v1/webhooks/${id}/deliveries`).expect(200)).body.data as { status: string }[]).every((d) => d.status === 'succeeded'), 'the test delivery to be recorded');
    moved.behave = () => 500;
    const h = await getHarness();
    await h.database.asSystem((trx) => trx.updateTable('webhooks').set({ failing_since: new Date(Date.now() - 5 * 86_400_000 - 60_000) }).where('id', '=', id).execute());
    await card.getByRole('button', { name: 'Send a test event' }).click();
    await eventually(async () => (await hookOf()).disabled_reason === 'failing', 'the dispatcher to disable the failing endpoint');
    // The endpoints are read again when the page is (the list is not updated live).
    await page.reload();
    await page.getByRole('listitem', { name: moved.url }).getByText('Disabled (disabled: five days of failed deliveries)').waitFor(WAIT);
    await shoot(page, 'settings-webhooks-disabled-failing', { fullPage: true });

    // Re-enabled in the app: the streak starts over, and deliveries flow again.
    moved.behave = () => 'ok';
    const again = page.getByRole('listitem', { name: moved.url });
    if (!(await again.getByRole('button', { name: 'Re-enable' }).isVisible())) await again.getByRole('button', { name: /^Manage/ }).click();
    await again.getByRole('button', { name: 'Re-enable' }).click();
    await again.getByText('Enabled').waitFor(WAIT);
    expect(await hookOf()).to.deep.include({ enabled: true, disabled_reason: null });
    const failing = await h.database.asSystem((trx) => trx.selectFrom('webhooks').select('failing_since').where('id', '=', id).executeTakeFirstOrThrow());
    expect(failing.failing_since).to.equal(null);
    const before = moved.received.filter((d) => d.answered === 200).length;
    await again.getByRole('button', { name: 'Send a test event' }).click();
    await moved.until((r) => r.filter((d) => d.answered === 200).length > before);
    // The failed attempt's 500 is the receiver's, not the app's; only the refused inputs may show.
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it("workflows: a run shows in the workflow's runs after its trigger fires", async () => {
    const t = await createTenant();
    withWorkflows.push(t.tenantId);
    const rush = (
      await as(t)
        .post('/api/v1/workflows')
        .send({ name: 'Rush new chats', trigger: { type: 'conversation.created' }, conditions: [], actions: [{ type: 'set_priority', priority: 'high' }] })
        .expect(201)
    ).body as { id: string };
    const { page, errors } = await signedIn(t.owner.email);
    await page.goto(`${api}/app/settings/workflows`);
    const flow = page.getByRole('listitem', { name: 'Rush new chats' });
    await flow.getByRole('button', { name: 'Runs of Rush new chats' }).click();
    await flow.getByText('No runs yet.').waitFor(WAIT);

    // The trigger: a visitor starts a conversation on the widget.
    const widget = (await as(t).post('/api/v1/widgets').send({ name: 'Shop' }).expect(201)).body as { id: string };
    await as(t).post('/api/v1/domains').send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    const session = await request(rt.app).post('/api/v1/widget/sessions').set('Origin', 'https://shop.example').send({ widget_id: widget.id, page_url: 'https://shop.example/' }).expect(201);
    const visitor = { Authorization: `Bearer ${session.body.visitor_token}`, Origin: 'https://shop.example' };
    const started = await request(rt.app).post('/api/v1/widget/conversations').set(visitor).send({ content: 'Is the red one in stock?' }).expect(201);
    const conversationId = (started.body.conversation?.id ?? started.body.id) as string;
    await eventually(async () => (await as(t).get(`/api/v1/conversations/${conversationId}`).expect(200)).body.priority === 'high', 'the workflow to raise the priority');
    await eventually(async () => (await as(t).get(`/api/v1/workflows/${rush.id}/runs`).expect(200)).body.data[0]?.status === 'succeeded', 'the run to be recorded as succeeded');

    // The runs as the page reads them when loaded (the open list is not updated live, and kept for
    // the app's 30 s staleTime): the run, succeeded.
    await page.reload();
    await flow.getByRole('button', { name: 'Runs of Rush new chats' }).click();
    const runs = flow.getByRole('table', { name: 'Runs' });
    // The run, and what its one action did.
    const run = runs.getByRole('row').filter({ hasText: 'conversation.created' });
    await run.getByRole('cell', { name: 'succeeded', exact: true }).waitFor(WAIT);
    await run.getByRole('cell', { name: 'Set the priority: succeeded' }).waitFor(WAIT);
    expect(await runs.getByRole('row').count()).to.equal(2);
    await noSeriousViolation(page, 'Workflows, a run');
    await shoot(page, 'settings-workflows-runs', { fullPage: true });
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('billing with Stripe set up: Subscribe and Manage billing lead to the checkout and portal addresses the service answers', async () => {
    const fake = new FakeStripe();
    const stripe = stripeClientOf(await fake.start(), 'sk_test_app_billing');
    const webhookSecret = 'whsec_app_billing_0123456789';
    const plans = parsePlans(JSON.stringify({ free: { seats: 3, conversations_per_period: 50 }, pro: { stripe_price_id: 'price_pro', seats: 10, conversations_per_period: null } }));
    const paid = await startRealtime({ config: { billing: { stripe: { secretKey: 'sk_test_app_billing', webhookSecret }, plans } }, stripe });
    const paidApi = paid.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    try {
      const t = await createTenant();
      const { page, errors } = await signedIn(t.owner.email, PASSWORD, paidApi);
      // Stripe's pages are not reached: the browser's requests to them are answered here (loopback only).
      const reached: string[] = [];
      await page.context().route(/^https:\/\/(checkout|billing)\.stripe\.test\//, (route) => {
        reached.push(route.request().url());
        return route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>Stripe</title><h1>Stripe</h1>' });
      });
      // What the service answers the app's checkout and portal calls, read on their way to the page.
      const answered: Record<string, { status: number; url: string }> = {};
      await page.route(/\/api\/v1\/billing\/(checkout|portal)$/, async (route) => {
        const response = await route.fetch();
        answered[new URL(route.request().url()).pathname.split('/').at(-1)!] = { status: response.status(), url: ((await response.json()) as { url: string }).url };
        await route.fulfill({ response });
      });
      await page.goto(`${paidApi}/app/settings/billing`);
      await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor(WAIT);
      await page.getByRole('button', { name: 'Subscribe' }).click();
      await eventually(() => answered.checkout !== undefined, 'the checkout call');
      expect(answered.checkout!.status).to.equal(201);
      const checkoutUrl = answered.checkout!.url;
      expect(checkoutUrl).to.match(/^https:\/\/checkout\.stripe\.test\//);
      await page.waitForURL(checkoutUrl, WAIT);
      const session = fake.calls.filter((c) => c.path === '/v1/checkout/sessions').at(-1)!;
      expect(session.form).to.include({ success_url: `${paidApi}/app/settings/billing`, cancel_url: `${paidApi}/app/settings/billing` });

      // Stripe tells the service the subscription started (its signed webhook): the page offers the portal.
      const payload = JSON.stringify({
        id: `evt_app_${Date.now()}`,
        object: 'event',
        type: 'customer.subscription.created',
        created: Math.floor(Date.now() / 1000),
        data: {
          object: {
            id: `sub_${session.form.customer}`,
            object: 'subscription',
            customer: session.form.customer,
            status: 'active',
            cancel_at_period_end: false,
            metadata: {},
            items: { object: 'list', data: [{ id: 'si_1', object: 'subscription_item', quantity: 3, current_period_start: Math.floor(Date.now() / 1000) - 60, current_period_end: Math.floor(Date.now() / 1000) + 30 * 86_400, price: { id: 'price_pro', object: 'price' } }] },
          },
        },
      });
      const signed = (body: string) => request(paid.app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', stripe.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret })).send(body).expect(200);
      await signed(payload);
      // And its first invoice, paid.
      const now = Math.floor(Date.now() / 1000);
      await signed(
        JSON.stringify({
          id: `evt_app_inv_${Date.now()}`,
          object: 'event',
          type: 'invoice.paid',
          created: now,
          data: {
            object: {
              id: 'in_app_1',
              object: 'invoice',
              customer: session.form.customer,
              number: 'NB-0001',
              status: 'paid',
              amount_due: 2900,
              currency: 'eur',
              created: now,
              period_start: now - 60,
              period_end: now + 30 * 86_400,
              hosted_invoice_url: 'https://invoice.stripe.test/i/in_app_1',
              invoice_pdf: null,
            },
          },
        }),
      );
      await page.goto(`${paidApi}/app/settings/billing`);
      await page.getByText(/active · renews/).waitFor(WAIT);
      const invoice = page.getByRole('region', { name: 'Invoices' }).getByRole('listitem').filter({ hasText: 'NB-0001' });
      await invoice.getByText('29.00 EUR').waitFor(WAIT);
      await invoice.getByText('paid', { exact: true }).waitFor(WAIT);
      expect(await invoice.getByRole('link', { name: 'View' }).getAttribute('href')).to.equal('https://invoice.stripe.test/i/in_app_1');
      await noSeriousViolation(page, 'Billing, subscribed through Stripe');
      await shoot(page, 'settings-billing-stripe', { fullPage: true });
      await page.getByRole('button', { name: 'Manage billing' }).click();
      await eventually(() => answered.portal !== undefined, 'the portal call');
      expect(answered.portal!.status).to.equal(201);
      const portalUrl = answered.portal!.url;
      expect(portalUrl).to.match(/^https:\/\/billing\.stripe\.test\//);
      await page.waitForURL(portalUrl, WAIT);
      expect(fake.calls.filter((c) => c.path === '/v1/billing_portal/sessions').at(-1)!.form).to.include({ return_url: `${paidApi}/app/settings/billing`, customer: session.form.customer });
      expect(reached).to.deep.equal([checkoutUrl, portalUrl]);
      expect(unexpected(errors)).to.deep.equal([]);
    } finally {
      await paid.close();
      await fake.close();
    }
  });

  it('an admin is offered no owner-only action: no Owner role to give, no role, seat or remove on an owner\'s row', async () => {
    const t = await createTenant();
    const admin = await addMember(t, { role: 'admin' });
    const agent = await addMember(t, { role: 'agent' });
    const { page, errors } = await signedIn(admin.email);
    await page.goto(`${api}/app/settings/team`);
    await page.getByRole('heading', { level: 1, name: 'Team' }).waitFor(WAIT);
    const ownerRow = page.getByRole('row', { name: new RegExp(t.owner.email.replace(/[.+]/g, '\\$&')) });
    // The role column says Owner, as text.
    await ownerRow.getByRole('cell').nth(2).filter({ hasText: /^Owner$/ }).waitFor(WAIT);
    expect(await ownerRow.getByRole('combobox').count()).to.equal(0);
    expect(await ownerRow.getByRole('button').count()).to.equal(0);
    expect(await page.getByLabel('Role', { exact: true }).locator('option').allTextContents()).to.deep.equal(['Agent', 'Admin']);
    expect(await page.getByLabel(`Role of ${agent.email}`).locator('option').allTextContents()).to.deep.equal(['Agent', 'Admin']);
    await page.getByLabel(`Role of ${agent.email}`).selectOption('admin');
    await eventually(async () => (await memberOf(t, agent.userId)).role === 'admin', 'the role to be admin');
    expect(unexpected(errors)).to.deep.equal([]);
  });

  it('an agent sees only the screens they may use, and an admin screen\'s address leads away from it', async () => {
    const t = await createTenant();
    const agent = await addMember(t, { role: 'agent' });
    const { page, errors } = await signedIn(agent.email);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Canned responses' }).waitFor(WAIT);
    const nav = page.getByRole('navigation', { name: 'Settings' });
    expect(await nav.getByRole('link').allTextContents()).to.deep.equal(['Canned responses']);
    for (const path of ['team', 'widgets', 'labels', 'api-keys', 'webhooks', 'workflows', 'bots', 'billing']) {
      await page.goto(`${api}/app/settings/${path}`);
      await page.getByRole('heading', { level: 1, name: 'Canned responses' }).waitFor(WAIT);
      expect(page.url()).to.equal(`${api}/app/settings/canned-responses`);
    }
    // The first-run guide's steps are the admins' too (naming the workspace, widgets, domains).
    for (const step of ['workspace', 'widget', 'install']) {
      await page.goto(`${api}/app/setup/${step}`);
      await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
      expect(page.url()).to.equal(`${api}/app/inbox/mine`);
    }
    expect(unexpected(errors)).to.deep.equal([]);
  });

  /** The API as the tenant's owner, for what the screens under test do not make (labels, widgets) and for checking what they stored. */
  function as(t: TestTenant) {
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    return { get: (path: string) => request(rt.app).get(path).set(auth), post: (path: string) => request(rt.app).post(path).set(auth) };
  }
  const workflowsOf = async (t: TestTenant) => (await as(t).get('/api/v1/workflows').expect(200)).body.data as Record<string, unknown>[];
  const botsOf = async (t: TestTenant) => (await as(t).get('/api/v1/bots').expect(200)).body.data as { id: string; name: string; llm: Record<string, unknown> | null }[];

  async function memberOf(t: TestTenant, userId: string) {
    const h = await getHarness();
    return h.database.asSystem((trx) => trx.selectFrom('memberships').select(['role', 'seat']).where('tenant_id', '=', t.tenantId).where('user_id', '=', userId).executeTakeFirstOrThrow());
  }
});
