import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { userHash } from '../../src/widgets/widget-public.service.ts';
import { type DemoSite, startDemoSite } from '../../scripts/demo-site.ts';
import { openBrowser, type SocketCutter, socketCutter } from '../support/browser.ts';
import { addMember, createTenant, login, type TestTenant } from '../support/factories.ts';
import { connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

// Callbacks given to page.evaluate run in the page. This compilation has no DOM library (the service is
// Node code), so the few browser globals they use are declared loosely, for this file only.
declare const document: any, window: any, localStorage: any, getComputedStyle: (el: unknown) => any;

export const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'artifacts', 'screenshots');
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WAIT = { timeout: 15_000 };

// The widget on the demo site, driven as a visitor would: real chromium, the service on 127.0.0.1 and the
// site on another origin (localhost, another port). Every wait is for something to appear, never a sleep.
describe('the chat widget in a browser', function () {
  this.timeout(90_000);
  let rt: RealtimeServer;
  let site: DemoSite;
  let api: string;
  let cutter: SocketCutter;

  before(async () => {
    rt = await startRealtime();
    cutter = socketCutter(rt.server);
    api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    site = await startDemoSite({ scriptUrl: `${api}/widget.js` });
  });
  after(async () => {
    await site?.close();
    await rt?.close();
  });

  async function widgetOf(t: TestTenant, options: { settings?: Record<string, string>; identityRequired?: boolean } = {}) {
    const auth = bearer(t.owner.accessToken);
    const settings = options.settings ?? { color: '#0a7d4f', greeting: 'Hello from Acme! Ask us anything.', position: 'bottom-right' };
    const widget = (await request(rt.app).post('/api/v1/widgets').set(auth).send({ name: 'Shop', settings, identity_required: options.identityRequired ?? false }).expect(201)).body;
    await request(rt.app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'localhost' }).expect(201);
    return widget as { id: string; identity_secret: string };
  }

  async function agentOf(t: TestTenant) {
    const agent = await addMember(t);
    const token = await login(agent.email);
    const socket = await connect(rt.wsUrl, bearer(token));
    return { ...agent, token, socket };
  }

  const say = (token: string, conversationId: string, content: string) =>
    request(rt.app).post('/api/v1/messages').set(bearer(token)).send({ conversation_id: conversationId, content }).expect(201);

  const texts = (page: Page) => page.locator('chat-widget .log li').evaluateAll((items) => items.map((li) => (li.lastChild?.textContent ?? '').trim()));

  async function openWidget(page: Page, url: string) {
    await page.goto(url);
    await page.locator('chat-widget .root[data-state="connected"]').waitFor({ state: 'attached', ...WAIT });
    await page.locator('chat-widget .bubble').click();
    await page.locator('chat-widget .panel').waitFor({ state: 'visible', ...WAIT });
  }

  async function write(page: Page, text: string) {
    const input = page.locator('chat-widget textarea#chat-input');
    await input.fill(text);
    await page.keyboard.press('Enter');
    await page.locator('chat-widget .log li.visitor', { hasText: text }).waitFor(WAIT);
    // The socket can show the message before the send has finished (a first message is read back after
    // the conversation starts), and the widget takes no new send until then: the box emptied says it has.
    await page.waitForFunction((el) => (el as unknown as { value: string }).value === '', await input.elementHandle(), WAIT);
  }

  it('a visitor writes, an agent answers live, a cut connection loses and doubles nothing, and the survey is answered', async () => {
    const t = await createTenant();
    const agent = await agentOf(t);
    const widget = await widgetOf(t);
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      await openWidget(page, `${site.url}/?widget=${widget.id}`);
      // The widget's settings, and focus in the message box for the keyboard.
      expect(await page.locator('chat-widget .bubble').evaluate((b) => getComputedStyle(b).backgroundColor)).to.equal('rgb(10, 125, 79)');
      expect(await page.locator('chat-widget #chat-greeting').textContent()).to.equal('Hello from Acme! Ask us anything.');
      expect(await page.evaluate(() => document.querySelector('chat-widget')!.shadowRoot!.activeElement?.id)).to.equal('chat-input');
      expect(await page.locator('chat-widget .bubble').getAttribute('aria-expanded')).to.equal('true');
      // The agent is online: no away message.
      expect(await page.locator('chat-widget .notice').isHidden()).to.equal(true);

      await write(page, 'Do you ship to Norway?');
      const first = await agent.socket.next((f) => f.type === 'message.created' && f.data.message.content === 'Do you ship to Norway?');
      const conversationId: string = first.data.conversation_id;

      // The agent types, then answers through the API: the visitor sees both without reloading.
      agent.socket.ws.send(JSON.stringify({ type: 'typing', conversation_id: conversationId, is_typing: true }));
      await page.locator('chat-widget .typing', { hasText: 'The team is typing' }).waitFor(WAIT);
      await say(agent.token, conversationId, 'Yes, we ship to Norway.');
      await page.locator('chat-widget .log li.team', { hasText: 'Yes, we ship to Norway.' }).waitFor(WAIT);
      expect(await page.locator('chat-widget .typing').textContent()).to.equal('');

      // The visitor is typing too: the agent is told (not who, just that the visitor is).
      const typedFrom = agent.socket.frames.length;
      await page.locator('chat-widget textarea#chat-input').pressSequentially('How long');
      const typing = await agent.socket.next((f) => f.type === 'typing' && f.data.sender_type === 'visitor', typedFrom);
      expect(typing.data).to.include({ conversation_id: conversationId, is_typing: true });
      await page.locator('chat-widget textarea#chat-input').fill('');

      // Cut: the socket drops and cannot come back; the agent answers meanwhile; then it may come back.
      const upgradesBefore = cutter.upgrades.length;
      cutter.cut();
      await page.locator('chat-widget .status', { hasText: 'Reconnecting' }).waitFor(WAIT);
      await say(agent.token, conversationId, 'It takes 3 days.');
      await say(agent.token, conversationId, 'Free above 100 EUR.');
      cutter.restore();
      await page.locator('chat-widget .log li.team', { hasText: 'Free above 100 EUR.' }).waitFor(WAIT);
      await page.locator('chat-widget .status').waitFor({ state: 'hidden', ...WAIT });
      // It came back by resuming after the last event it had, not by reloading.
      const resumed = cutter.upgrades.slice(upgradesBefore).at(-1)!;
      expect(resumed.get('last_event_id')).to.match(/^evt_/);
      expect(await texts(page)).to.deep.equal(['Do you ship to Norway?', 'Yes, we ship to Norway.', 'It takes 3 days.', 'Free above 100 EUR.']);

      // An attachment: uploaded through the widget API, sent with the message, seen by the agent.
      await page.locator('chat-widget input[type="file"]').setInputFiles({ name: 'order.txt', mimeType: 'text/plain', buffer: Buffer.from('Order 1234: two tents') });
      await page.locator('chat-widget .chip', { hasText: 'order.txt' }).waitFor(WAIT);
      await write(page, 'Here is my order');
      await page.locator('chat-widget .log li.visitor button.file', { hasText: 'order.txt' }).waitFor(WAIT);
      const withFile = await agent.socket.next((f) => f.type === 'message.created' && f.data.message.content === 'Here is my order');
      expect(withFile.data.message.attachments).to.have.length(1);
      expect(withFile.data.message.attachments[0]).to.include({ name: 'order.txt', size: 21 });
      expect(withFile.data.message.attachments[0].content_type).to.match(/^text\/plain/);

      // Closed panel: Escape closes it and gives focus back to the bubble; a reply shows as unread.
      await page.keyboard.press('Escape');
      await page.locator('chat-widget .panel').waitFor({ state: 'hidden', ...WAIT });
      expect(await page.evaluate(() => document.querySelector('chat-widget')!.shadowRoot!.activeElement?.className)).to.equal('bubble');
      await say(agent.token, conversationId, 'Anything else?');
      await page.locator('chat-widget .badge', { hasText: '1' }).waitFor(WAIT);
      expect(await page.locator('chat-widget .bubble').getAttribute('aria-label')).to.equal('Open chat, 1 unread message');
      await page.keyboard.press('Enter');
      await page.locator('chat-widget .badge').waitFor({ state: 'hidden', ...WAIT });

      // The agent closes: the survey appears, the visitor answers it, the team hears csat.submitted.
      await request(rt.app).post(`/api/v1/conversations/${conversationId}/close`).set(bearer(agent.token)).expect(200);
      await page.locator('chat-widget .survey legend', { hasText: 'How was your chat?' }).waitFor(WAIT);
      await page.locator('chat-widget .stars label').nth(3).click();
      await page.locator('chat-widget .survey textarea').fill('Fast and friendly');
      await page.locator('chat-widget .survey button[type="submit"]').click();
      await page.locator('chat-widget .ended', { hasText: 'Thank you for your feedback!' }).waitFor(WAIT);
      const csat = await agent.socket.next((f) => f.type === 'csat.submitted');
      expect(csat.data).to.include({ conversation_id: conversationId, rating: 4, comment: 'Fast and friendly' });

      // A returning visitor (same browser, token in localStorage) sees their history again.
      const visitorsBefore = (await request(rt.app).get('/api/v1/visitors').set(bearer(agent.token)).expect(200)).body.data.map((v: { id: string }) => v.id);
      await openWidget(page, `${site.url}/?widget=${widget.id}`);
      await page.locator('chat-widget .log li.team', { hasText: 'Anything else?' }).waitFor(WAIT);
      await page.locator('chat-widget .ended button', { hasText: 'Start a new conversation' }).waitFor(WAIT);
      const visitorsAfter = (await request(rt.app).get('/api/v1/visitors').set(bearer(agent.token)).expect(200)).body.data.map((v: { id: string }) => v.id);
      expect(visitorsAfter).to.deep.equal(visitorsBefore).and.to.have.length(1);
      const texts2 = await texts(page);
      expect(new Set(texts2).size, 'no message twice').to.equal(texts2.length);
    } finally {
      agent.socket.close();
      await browsing.close();
    }
  });

  it('a page on an origin the widget does not allow shows the refusal, and no request succeeds', async () => {
    const t = await createTenant();
    const agent = await agentOf(t);
    const widget = await widgetOf(t);
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      const answered: { url: string; status: number }[] = [];
      page.on('response', (res) => {
        if (res.url().startsWith(`${api}/api/`)) answered.push({ url: res.url(), status: res.status() });
      });
      // The same site, reached as 127.0.0.1: another origin, not among the widget's domains (localhost).
      await page.goto(`http://127.0.0.1:${site.port}/?widget=${widget.id}`);
      await page.locator('chat-widget .root[data-state="refused"]').waitFor({ state: 'attached', ...WAIT });
      await page.locator('chat-widget .bubble').click();
      await page.locator('chat-widget .alert', { hasText: 'Chat is not available on this website.' }).waitFor(WAIT);
      expect(await page.locator('chat-widget .composer').isHidden()).to.equal(true);
      expect(answered.length).to.be.greaterThan(0);
      expect(answered.filter((a) => a.status < 400), JSON.stringify(answered)).to.deep.equal([]);
      // Nothing was recorded for the tenant either: no visitor, no conversation.
      expect((await request(rt.app).get('/api/v1/visitors').set(bearer(agent.token)).expect(200)).body.data).to.deep.equal([]);
      expect((await request(rt.app).get('/api/v1/conversations').set(bearer(agent.token)).expect(200)).body.data).to.deep.equal([]);
    } finally {
      agent.socket.close();
      await browsing.close();
    }
  });

  it('the host page\'s aggressive CSS changes nothing in the widget, and the widget changes nothing on the page', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const browsing = await openBrowser();
    const looks = (page: Page) =>
      page.evaluate(() => {
        const root = document.querySelector('chat-widget')!.shadowRoot!;
        const props = ['color', 'backgroundColor', 'fontFamily', 'fontSize', 'fontStyle', 'lineHeight', 'letterSpacing', 'textTransform', 'padding', 'margin', 'borderTopStyle', 'boxSizing', 'display', 'position', 'opacity'] as const;
        return ['.bubble', '.panel', '.head h2', '#chat-greeting', '.log', 'textarea#chat-input', '.composer button.primary'].map((selector) => {
          const el = root.querySelector(selector)!;
          const style = getComputedStyle(el);
          const box = el.getBoundingClientRect();
          return { selector, box: [box.x, box.y, box.width, box.height].map(Math.round), ...Object.fromEntries(props.map((p) => [p, style[p]])) };
        });
      });
    try {
      const page = await browsing.context.newPage();
      await openWidget(page, `${site.url}/?widget=${widget.id}`);
      const plain = await looks(page);
      await openWidget(page, `${site.url}/hostile?widget=${widget.id}`);
      expect(await page.locator('#hostile').count()).to.equal(1);
      expect(await page.locator('#intro').evaluate((el) => getComputedStyle(el).color)).to.equal('rgb(255, 0, 255)');
      expect(await looks(page)).to.deep.equal(plain);

      // The page's own elements look the same with the widget as without it.
      const pageLooks = () =>
        page.locator('header, main, #intro, h1, .product').evaluateAll((els) =>
          els.map((el) => {
            const style = getComputedStyle(el);
            return [style.font, style.color, style.backgroundColor, style.margin, style.padding, JSON.stringify(el.getBoundingClientRect())];
          }),
        );
      await openWidget(page, `${site.url}/?widget=${widget.id}`);
      const withWidget = await pageLooks();
      await page.route('**/widget.js', (route) => route.abort());
      await page.goto(`${site.url}/?widget=${widget.id}`);
      expect(await page.locator('chat-widget').count()).to.equal(0);
      expect(await pageLooks()).to.deep.equal(withWidget);
    } finally {
      await browsing.close();
    }
  });

  it('Enter pressed while a message is on its way sends the next once that one is stored: nothing written is lost', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      await openWidget(page, `${site.url}/?widget=${widget.id}`);
      await write(page, 'First question');
      // The next send is held on its way until the visitor has written and sent another.
      let reached!: () => void;
      const held = new Promise<void>((resolve) => (reached = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding = true;
      await page.route('**/api/v1/widget/conversations/*/messages', async (route) => {
        if (route.request().method() === 'POST' && holding) {
          holding = false;
          reached();
          await released;
        }
        await route.continue();
      });
      const input = page.locator('chat-widget textarea#chat-input');
      await input.fill('Second question');
      await page.keyboard.press('Enter');
      await held;
      await input.fill('Third question');
      await page.keyboard.press('Enter');
      release();
      await page.locator('chat-widget .log li.visitor', { hasText: 'Third question' }).waitFor(WAIT);
      await page.waitForFunction((el) => (el as unknown as { value: string }).value === '', await input.elementHandle(), WAIT);
      const shown = await page.locator('chat-widget .log li.visitor').allTextContents();
      expect(shown.map((text) => ['First question', 'Second question', 'Third question'].find((m) => text.includes(m)))).to.deep.equal([
        'First question',
        'Second question',
        'Third question',
      ]);
    } finally {
      await browsing.close();
    }
  });

  it('tells the visitor when they are offline or rate limited, and keeps what they wrote', async () => {
    const limited = await startRealtime({ config: { rateLimits: { ...(await import('../support/harness.ts')).TEST_CONFIG.rateLimits, widgetMessages: 1 } } });
    const limitedApi = limited.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    const limitedSite = await startDemoSite({ scriptUrl: `${limitedApi}/widget.js` });
    const t = await createTenant();
    const widget = await widgetOf(t, { settings: { away_message: 'Back at 9 tomorrow: leave us a message.' } });
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      await openWidget(page, `${limitedSite.url}/?widget=${widget.id}`);
      // Nobody of the team is online: the away message says so before the visitor writes.
      expect(await page.locator('chat-widget .notice').textContent()).to.equal('Back at 9 tomorrow: leave us a message.');
      await write(page, 'First question');
      await write(page, 'Second question');
      // One message a minute after the first (which started the conversation): the next is refused, said
      // in words, and stays in the box.
      await page.locator('chat-widget textarea#chat-input').fill('Third question');
      await page.keyboard.press('Enter');
      await page.locator('chat-widget .alert', { hasText: 'You are sending messages too quickly' }).waitFor(WAIT);
      expect(await page.locator('chat-widget textarea#chat-input').inputValue()).to.equal('Third question');
      expect(await page.locator('chat-widget .alert').textContent()).not.to.match(/ERR_|\{|429/);

      await browsing.context.setOffline(true);
      await page.locator('chat-widget textarea#chat-input').fill('Are you there?');
      await page.keyboard.press('Enter');
      await page.locator('chat-widget .alert', { hasText: 'You appear to be offline' }).waitFor(WAIT);
      expect(await page.locator('chat-widget textarea#chat-input').inputValue()).to.equal('Are you there?');
      await browsing.context.setOffline(false);
    } finally {
      await browsing.close();
      await limitedSite.close();
      await limited.close();
    }
  });

  it('a signed-in user of the site is verified by user_hash, on a widget that requires it', async () => {
    const t = await createTenant();
    const agent = await agentOf(t);
    const widget = await widgetOf(t, { identityRequired: true });
    const email = `shopper-${Date.now()}@example.test`;
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      await openWidget(page, `${site.url}/?widget=${widget.id}&email=${encodeURIComponent(email)}&user_hash=${userHash(widget.identity_secret, email)}`);
      await write(page, 'Where is my order?');
      const created = await agent.socket.next((f) => f.type === 'conversation.created');
      const contactId = created.data.conversation.contact_id;
      expect(contactId).to.be.a('string');
      const contact = (await request(rt.app).get(`/api/v1/contacts/${contactId}`).set(bearer(agent.token)).expect(200)).body;
      expect(contact.email).to.equal(email);

      // Without the identity the same widget refuses the page, in words.
      await page.goto(`${site.url}/?widget=${widget.id}`);
      await page.locator('chat-widget .root[data-state="refused"]').waitFor({ state: 'attached', ...WAIT });
      // And identify() at run time, with a wrong hash, is told so.
      await page.evaluate((e) => (window as any).ChatWidget.identify({ email: e, user_hash: '0'.repeat(64) }), email);
      await page.locator('chat-widget .root[data-state="identity"]').waitFor({ state: 'attached', ...WAIT });
      await page.evaluate(([e, h]) => (window as any).ChatWidget.identify({ email: e!, user_hash: h! }), [email, userHash(widget.identity_secret, email)]);
      await page.locator('chat-widget .root[data-state="connected"]').waitFor({ state: 'attached', ...WAIT });
      await page.locator('chat-widget .bubble').click();
      await page.locator('chat-widget .log li.visitor', { hasText: 'Where is my order?' }).waitFor(WAIT);
    } finally {
      agent.socket.close();
      await browsing.close();
    }
  });

  it('looks right open on a desktop and on a phone (screenshots)', async () => {
    const t = await createTenant();
    const agent = await agentOf(t);
    const widget = await widgetOf(t);
    await mkdir(SCREENSHOTS, { recursive: true });
    let stored: [string, string] | undefined;
    for (const device of [
      { name: 'desktop', viewport: { width: 1280, height: 800 }, isMobile: false },
      { name: 'phone', viewport: { width: 390, height: 844 }, isMobile: true },
    ]) {
      const browsing = await openBrowser(device);
      try {
        // The phone is the same visitor: their token in localStorage, as on a returning visit.
        if (stored) await browsing.context.addInitScript(([key, token]) => localStorage.setItem(key, token), stored);
        const page = await browsing.context.newPage();
        await openWidget(page, `${site.url}/?widget=${widget.id}`);
        if (device.name === 'desktop') {
          await write(page, 'Hi! Does the Trailhead 2 fit two people with packs?');
          const first = await agent.socket.next((f) => f.type === 'message.created' && f.data.message.sender_type === 'visitor');
          await say(agent.token, first.data.conversation_id, 'It does: there is a vestibule on each side for packs and boots.');
        }
        await page.locator('chat-widget .log li.team', { hasText: 'vestibule' }).waitFor(WAIT);
        const key = `chat-widget:${widget.id}`;
        stored = [key, (await page.evaluate((k) => localStorage.getItem(k), key))!];
        const panel = await page.locator('chat-widget .panel').boundingBox();
        if (device.name === 'phone') expect(panel).to.include({ x: 0, y: 0, width: 390, height: 844 });
        else expect(panel!.width).to.equal(360);
        await page.screenshot({ path: join(SCREENSHOTS, `widget-${device.name}.png`) });
      } finally {
        await browsing.close();
      }
    }
    agent.socket.close();
  });
});
