import { AxeBuilder } from '@axe-core/playwright';
import { expect } from 'chai';
import request from 'supertest';
import type { Locator, Page } from 'playwright-core';
import { openBrowser, type Browsing } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { addMember, createTenant, PASSWORD, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { shoot, shootBoth } from '../support/screenshots.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';
import type { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';

const WAIT = { timeout: 15_000 };

// The settings screens against the real service, in chromium: each creates, changes and deletes through
// its form; a refused input shows the service's own message beside its field; an agent never reaches the
// admin screens; a webhook endpoint made here receives a test delivery on a loopback receiver.
describe('the team app: settings in a browser', function () {
  this.timeout(180_000);
  let rt: RealtimeServer;
  let api: string;
  let dispatcher: WebhookDispatcher;
  const open: Browsing[] = [];
  const receivers: Receiver[] = [];

  before(async () => {
    rt = await startRealtime();
    api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    dispatcher = testDispatcher(await getHarness(), { bus: rt.bus, timeoutMs: 2_000, retryDelaysMs: [100, 200], pollMs: 100 });
    rt.services.webhooks.onDeliveryDue(() => dispatcher.wake());
    dispatcher.start();
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
  });
  after(async () => {
    await dispatcher?.stop();
    const h = await getHarness();
    // On a shared PostgreSQL database, endpoints left behind would retry towards ports other tests reuse.
    await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', 'like', 'http://127.0.0.1:%/hook').execute());
    for (const r of receivers.splice(0)) await r.close();
    await rt?.close();
  });

  async function signedIn(email: string) {
    const b = await openBrowser();
    open.push(b);
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api });
    const page = await b.context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${api}/app/`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Conversation views' }).waitFor(WAIT);
    return { page, errors };
  }

  async function screen(page: Page, label: string, shot: string) {
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: label }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor(WAIT);
    await page.getByRole('status').filter({ hasText: 'Loading…' }).waitFor({ state: 'detached', ...WAIT });
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious.map((v) => `${label}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).to.deep.equal([]);
    await shoot(page, `settings-${shot}`, { fullPage: true });
    await shootBoth(page, `settings-${shot}`, { docs: true });
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
    await page.getByLabel('E-mail', { exact: true }).fill('new.colleague@example.test');
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').filter({ hasText: 'Invitation sent to new.colleague@example.test' }).waitFor(WAIT);
    const row = page.getByRole('row', { name: /new\.colleague@example\.test/ });
    await row.getByText('Invited').waitFor(WAIT);

    // Role and seat of an active member; then remove the invited one.
    await page.getByLabel(`Seat of ${agent.email}`).selectOption('lite');
    await eventually(async () => (await memberOf(t, agent.userId)).seat === 'lite', 'the seat to be lite');
    await page.getByLabel(`Role of ${agent.email}`).selectOption('admin');
    await eventually(async () => (await memberOf(t, agent.userId)).role === 'admin', 'the role to be admin');
    await page.getByRole('button', { name: 'Remove new.colleague@example.test' }).click();
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
    expect(await page.locator('.copyable pre', { hasText: 'createHmac' }).textContent()).to.include(secret!);
    await page.getByRole('button', { name: 'Done' }).click();

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
    await page.getByRole('button', { name: 'Done' }).click();
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
    await shoot(page, 'settings-webhooks-delivered', { fullPage: true });
    await log.getByRole('button', { name: 'Redeliver' }).click();
    await receiver.until((r) => r.filter((d) => d.verified?.type === 'webhook.test').length === 2);
    await log.getByRole('row', { name: /webhook\.test succeeded HTTP 200 2/ }).waitFor(WAIT);

    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByText('Disabled (disabled by a member)').waitFor(WAIT);
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

  it('an agent sees only the screens they may use, and an admin screen\'s address leads away from it', async () => {
    const t = await createTenant();
    const agent = await addMember(t, { role: 'agent' });
    const { page, errors } = await signedIn(agent.email);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Canned responses' }).waitFor(WAIT);
    const nav = page.getByRole('navigation', { name: 'Settings' });
    expect(await nav.getByRole('link').allTextContents()).to.deep.equal(['Canned responses']);
    for (const path of ['team', 'widgets', 'api-keys', 'webhooks', 'workflows', 'bots', 'billing']) {
      await page.goto(`${api}/app/settings/${path}`);
      await page.getByRole('heading', { level: 1, name: 'Canned responses' }).waitFor(WAIT);
      expect(page.url()).to.equal(`${api}/app/settings/canned-responses`);
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
