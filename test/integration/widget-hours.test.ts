import { expect } from 'chai';
import request from 'supertest';
import { addMember, createConversation, createTenant, login, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

const SITE = 'https://shop.example';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WEEKDAY = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const hhmm = (d: Date) => d.toISOString().slice(11, 16);

describe('the bubble and business hours (widget sessions)', function () {
  this.timeout(30_000);
  let rt: RealtimeServer;
  before(async () => {
    rt = await startRealtime();
  });
  after(async () => {
    await rt.close();
  });

  async function widgetOf(t: TestTenant, settings: Record<string, unknown> = {}) {
    const auth = bearer(t.owner.accessToken);
    const widget = (await request(rt.app).post('/api/v1/widgets').set(auth).send({ name: 'Site', settings }).expect(201)).body;
    await request(rt.app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    return widget as { id: string };
  }
  const session = async (widgetId: string) =>
    (await request(rt.app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widgetId, page_url: `${SITE}/` }).expect(201)).body.widget;

  it('inside hours with an agent online: open and available; outside: not available, with the next opening; hide_outside_hours comes with the settings', async () => {
    const t = await createTenant();
    const agent = await addMember(t);
    const widget = await widgetOf(t, { hide_outside_hours: true, away_message: 'Back soon.' });
    const socket = await connect(rt.wsUrl, bearer(await login(agent.email)));
    expect(await session(widget.id)).to.include({ open: true, next_open_at: null, team_available: true });

    // Hours that begin two hours from now: closed until then, whoever is online.
    const start = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 2 * 3_600_000);
    const end = new Date(start.getTime() + 3_600_000);
    const hours = { time_zone: 'UTC', weekly: { [WEEKDAY[start.getUTCDay()]!]: [[hhmm(start), hhmm(end)]] } };
    await request(rt.app).put('/api/v1/business-hours').set(bearer(t.owner.accessToken)).send({ hours }).expect(200);
    const closed = await session(widget.id);
    expect(closed).to.include({ open: false, next_open_at: start.toISOString(), team_available: false });
    expect(closed.settings).to.include({ hide_outside_hours: true });
    socket.close();
  });

  it('inside hours, an agent at capacity is not available: the bubble shows the away message', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    // The owner has no room either, so only the agent could answer.
    await database.withTenant(t.tenantId, (trx) => trx.updateTable('memberships').set({ capacity: 1 }).execute());
    const widget = await widgetOf(t);
    const socket = await connect(rt.wsUrl, bearer(await login(agent.email)));
    const owner = await connect(rt.wsUrl, bearer(t.owner.accessToken));
    expect((await session(widget.id)).team_available).to.equal(true);
    const c1 = await createConversation(t, {}, t.owner.accessToken, rt.app);
    await request(rt.app).post(`/api/v1/conversations/${c1.id}/assign`).set(bearer(t.owner.accessToken)).send({ user_id: agent.userId }).expect(200);
    const c2 = await createConversation(t, {}, t.owner.accessToken, rt.app);
    await request(rt.app).post(`/api/v1/conversations/${c2.id}/assign`).set(bearer(t.owner.accessToken)).send({ user_id: t.owner.userId }).expect(200);
    expect((await session(widget.id)).team_available, 'both at capacity 1').to.equal(false);
    await database.withTenant(t.tenantId, (trx) => trx.updateTable('memberships').set({ capacity: null }).where('user_id', '=', agent.userId).execute());
    expect((await session(widget.id)).team_available, 'null capacity is no limit').to.equal(true);
    socket.close();
    owner.close();
  });
});
