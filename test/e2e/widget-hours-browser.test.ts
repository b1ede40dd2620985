import { expect } from 'chai';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { type DemoSite, startDemoSite } from '../../scripts/demo-site.ts';
import { openBrowser } from '../support/browser.ts';
import { addMember, createTenant, login, type TestTenant } from '../support/factories.ts';
import { connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WAIT = { timeout: 15_000 };
const WEEKDAY = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const hhmm = (d: Date) => d.toISOString().slice(11, 16);

// The bubble's states by business hours and availability, in chromium on the demo site.
describe('the chat widget and business hours, in a browser', function () {
  this.timeout(90_000);
  let rt: RealtimeServer;
  let site: DemoSite;

  before(async () => {
    rt = await startRealtime();
    const api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/api\/v1\/ws$/, '');
    site = await startDemoSite({ scriptUrl: `${api}/widget.js` });
  });
  after(async () => {
    await site?.close();
    await rt?.close();
  });

  async function widgetOf(t: TestTenant, settings: Record<string, unknown>) {
    const auth = bearer(t.owner.accessToken);
    const widget = (await request(rt.app).post('/api/v1/widgets').set(auth).send({ name: 'Shop', settings }).expect(201)).body;
    await request(rt.app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'localhost' }).expect(201);
    return widget as { id: string };
  }

  /** Opens the page and waits until the session answered (the root says whether the team is in hours). */
  async function load(page: Page, widgetId: string, hours: 'open' | 'closed') {
    await page.goto(`${site.url}/?widget=${widgetId}`);
    await page.locator(`chat-widget .root[data-hours="${hours}"]`).waitFor({ state: 'attached', ...WAIT });
  }

  it('open with an agent available: no notice; open with nobody available: the away message; closed: the away message and when hours begin; hidden when the widget says so', async () => {
    const t = await createTenant();
    const agent = await addMember(t);
    const widget = await widgetOf(t, { away_message: 'Leave us a message.' });
    const browsing = await openBrowser();
    try {
      const page = await browsing.context.newPage();
      // Open (no hours), nobody online.
      await load(page, widget.id, 'open');
      await page.locator('chat-widget .bubble').click();
      await page.locator('chat-widget .panel').waitFor({ state: 'visible', ...WAIT });
      expect(await page.locator('chat-widget .notice').textContent()).to.equal('Leave us a message.');

      // Open, an agent online.
      const socket = await connect(rt.wsUrl, bearer(await login(agent.email)));
      await load(page, widget.id, 'open');
      expect(await page.locator('chat-widget .notice').isHidden()).to.equal(true);

      // Closed: hours begin two hours from now; the agent online changes nothing.
      const start = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 2 * 3_600_000);
      const hours = { time_zone: 'UTC', weekly: { [WEEKDAY[start.getUTCDay()]!]: [[hhmm(start), hhmm(new Date(start.getTime() + 3_600_000))]] } };
      await request(rt.app).put('/api/v1/business-hours').set(bearer(t.owner.accessToken)).send({ hours }).expect(200);
      await load(page, widget.id, 'closed');
      await page.locator('chat-widget .bubble').click();
      const notice = await page.locator('chat-widget .notice').textContent();
      expect(notice).to.match(/^Leave us a message\. We are back \w+day /);
      await page.screenshot({ path: 'artifacts/screenshots/widget-outside-hours.png' }).catch(() => undefined);

      // Closed, and the widget hides itself outside hours.
      await request(rt.app).patch(`/api/v1/widgets/${widget.id}`).set(bearer(t.owner.accessToken)).send({ settings: { hide_outside_hours: true } }).expect(200);
      await load(page, widget.id, 'closed');
      expect(await page.locator('chat-widget .root').isHidden()).to.equal(true);
      expect(await page.locator('chat-widget .bubble').isVisible()).to.equal(false);
      socket.close();
    } finally {
      await browsing.close();
    }
  });
});
