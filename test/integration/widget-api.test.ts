import { expect } from 'chai';
import request from 'supertest';
import { userHash } from '../../src/widgets/widget-public.service.ts';
import { addMember, createTenant, login, type TestTenant } from '../support/factories.ts';
import { TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { connect, contractErrors, type RealtimeServer, startRealtime } from '../support/realtime.ts';

const SITE = 'https://shop.example';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('the public widget API', function () {
  this.timeout(30_000);
  let rt: RealtimeServer;

  before(async () => {
    rt = await startRealtime();
  });
  after(async () => {
    await rt.close();
  });

  async function widgetOf(t: TestTenant, options: { domain?: string; identityRequired?: boolean } = {}) {
    const auth = bearer(t.owner.accessToken);
    const widget = (await request(rt.app).post('/api/v1/widgets').set(auth).send({ name: 'Site', identity_required: options.identityRequired ?? false }).expect(201)).body;
    await request(rt.app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: options.domain ?? 'shop.example' }).expect(201);
    return widget as { id: string; identity_secret: string };
  }

  function session(widgetId: string, extra: Record<string, unknown> = {}, origin = SITE, headers: Record<string, string> = {}) {
    return request(rt.app)
      .post('/api/v1/widget/sessions')
      .set('Origin', origin)
      .set(headers)
      .send({ widget_id: widgetId, page_url: `${SITE}/pricing`, page_title: 'Pricing', ...extra });
  }

  const asVisitor = (token: string, origin = SITE) => ({ Authorization: `Bearer ${token}`, Origin: origin });

  it('a visitor from an allowed origin chats with an agent end to end, over REST and both sockets', async () => {
    const t = await createTenant();
    const agent = await addMember(t);
    const agentToken = await login(agent.email);
    const widget = await widgetOf(t);
    const started = await session(widget.id);
    expect(started.status).to.equal(201);
    expect(started.headers['access-control-allow-origin']).to.equal(SITE);
    const { visitor_id: visitorId, visitor_token: token } = started.body;
    expect(started.body.widget.id).to.equal(widget.id);

    const agentSocket = await connect(rt.wsUrl, bearer(agentToken));
    const visitorSocket = await connect(`${rt.wsUrl}?visitor_token=${token}`, { Origin: SITE });
    expect(visitorSocket.frames[0]).to.include({ audience: 'visitor' });
    const online = await agentSocket.next((f) => f.type === 'visitor.online');
    expect(online.data).to.deep.equal({ visitor_id: visitorId });

    const conv = await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'Do you ship to Norway?' }).expect(201);
    expect(conv.body).to.include({ status: 'open', last_message: 'Do you ship to Norway?', survey: null });
    const seenByAgent = await agentSocket.next((f) => f.type === 'message.created' && f.data.message.content === 'Do you ship to Norway?');
    expect(seenByAgent.data.message).to.include({ sender_type: 'visitor', sender_id: visitorId });

    await request(rt.app).post(`/api/v1/conversations/${conv.body.id}/assign`).set(bearer(agentToken)).send({ user_id: agent.userId }).expect(200);
    await request(rt.app).post('/api/v1/messages').set(bearer(agentToken)).send({ conversation_id: conv.body.id, content: 'Internal: check stock', internal: true }).expect(201);
    await request(rt.app).post('/api/v1/messages').set(bearer(agentToken)).send({ conversation_id: conv.body.id, content: 'Yes, we do!' }).expect(201);
    const reply = await visitorSocket.next((f) => f.type === 'message.created' && f.data.message.content === 'Yes, we do!');
    expect(reply.data.message.sender_id).to.equal(null);
    expect(contractErrors(reply)).to.deep.equal([]);

    await request(rt.app).post(`/api/v1/widget/conversations/${conv.body.id}/messages`).set(asVisitor(token)).send({ content: 'Great, thanks' }).expect(201);
    const messages = await request(rt.app).get(`/api/v1/widget/conversations/${conv.body.id}/messages`).set(asVisitor(token)).expect(200);
    expect(messages.body.data.map((m: { content: string }) => m.content)).to.deep.equal(['Great, thanks', 'Yes, we do!', 'Do you ship to Norway?']);
    expect(JSON.stringify(messages.body)).not.to.contain('Internal: check stock').and.not.to.contain(agent.userId);
    expect(JSON.stringify(visitorSocket.frames)).not.to.contain('Internal: check stock').and.not.to.contain(agent.userId);

    // Closing brings the survey; the visitor answers it once; the answer shows on the conversation.
    await request(rt.app).post(`/api/v1/conversations/${conv.body.id}/close`).set(bearer(agentToken)).expect(200);
    const listed = await request(rt.app).get('/api/v1/widget/conversations').set(asVisitor(token)).expect(200);
    expect(listed.body.data[0]).to.deep.include({ id: conv.body.id, status: 'closed' });
    expect(listed.body.data[0].survey).to.include({ status: 'pending', rating: null });
    const answer = await request(rt.app).post(`/api/v1/widget/conversations/${conv.body.id}/survey`).set(asVisitor(token)).send({ rating: 5, comment: 'Quick!' }).expect(201);
    expect(answer.body).to.include({ conversation_id: conv.body.id, rating: 5, comment: 'Quick!' });
    const csat = await agentSocket.next((f) => f.type === 'csat.submitted');
    expect(csat.data).to.deep.equal({ conversation_id: conv.body.id, survey_id: answer.body.survey_id, rating: 5, comment: 'Quick!' });
    expect(contractErrors(csat)).to.deep.equal([]);
    const again = await request(rt.app).post(`/api/v1/widget/conversations/${conv.body.id}/survey`).set(asVisitor(token)).send({ rating: 1 });
    expectProblem(again, 409, 'ERR_CONFLICT');
    const shown = await request(rt.app).get(`/api/v1/conversations/${conv.body.id}`).set(bearer(agentToken)).expect(200);
    expect(shown.body.satisfaction).to.include({ rating: 5, comment: 'Quick!' });
    expectProblem(
      await request(rt.app).post(`/api/v1/widget/conversations/${conv.body.id}/messages`).set(asVisitor(token)).send({ content: 'one more thing' }),
      409,
      'ERR_CONVERSATION_CLOSED',
    );

    visitorSocket.close();
    const offline = await agentSocket.next((f) => f.type === 'visitor.offline');
    expect(offline.data).to.deep.equal({ visitor_id: visitorId });
    agentSocket.close();
  });

  it('a session says whether someone in the team is online to answer (online, not away; full seats only)', async () => {
    const t = await createTenant();
    const agent = await addMember(t);
    const lite = await addMember(t, { seat: 'lite' });
    const widget = await widgetOf(t);
    const available = async () => (await session(widget.id).expect(201)).body.widget.team_available;
    expect(await available()).to.equal(false);
    const liteSocket = await connect(rt.wsUrl, bearer(await login(lite.email)));
    expect(await available(), 'a lite seat does not answer chats').to.equal(false);
    const agentSocket = await connect(rt.wsUrl, bearer(await login(agent.email)));
    expect(await available()).to.equal(true);
    agentSocket.ws.send(JSON.stringify({ type: 'presence', status: 'away' }));
    // The lite member hears the agent's presence change once it is recorded.
    await liteSocket.next((f) => f.type === 'presence.updated' && f.data.user_id === agent.userId && f.data.presence === 'away');
    expect(await available(), 'away is not available').to.equal(false);
    agentSocket.close();
    liteSocket.close();
  });

  it('a foreign origin is refused at every public operation, and gets no CORS header', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const token = (await session(widget.id).expect(201)).body.visitor_token;
    const conv = (await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'hi' }).expect(201)).body;
    const evil = 'https://evil.example';
    const refusals = [
      await session(widget.id, {}, evil),
      await session(widget.id, {}, 'null'),
      await request(rt.app).post('/api/v1/widget/sessions').send({ widget_id: widget.id, page_url: `${SITE}/` }),
      await request(rt.app).post('/api/v1/widget/page-views').set(asVisitor(token, evil)).send({ url: `${SITE}/x` }),
      await request(rt.app).get('/api/v1/widget/conversations').set(asVisitor(token, evil)),
      await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token, evil)).send({ content: 'hi' }),
      await request(rt.app).get(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(token, evil)),
      await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(token, evil)).send({ content: 'hi' }),
      await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/survey`).set(asVisitor(token, evil)).send({ rating: 3 }),
    ];
    for (const res of refusals) {
      expect(res.status, res.text).to.be.oneOf([400, 403]);
      expect(res.headers['access-control-allow-origin']).to.equal(undefined);
    }
    // The socket too.
    const ws = await connect(`${rt.wsUrl}?visitor_token=${token}`, { Origin: evil }).then(() => null, (e: { status?: number }) => e);
    expect(ws?.status).to.equal(403);
    // A subdomain of an allowed wildcard is fine; the preflight answers allowed origins only.
    const wild = await widgetOf(await createTenant(), { domain: '*.wild.example' });
    expect((await session(wild.id, { page_url: 'https://a.wild.example/' }, 'https://a.wild.example')).status).to.equal(201);
    const preflight = await request(rt.app).options('/api/v1/widget/sessions').set('Origin', 'https://a.wild.example').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).to.equal(204);
    expect(preflight.headers['access-control-allow-origin']).to.equal('https://a.wild.example');
    expect(preflight.headers['access-control-allow-headers']).to.contain('Authorization');
    expectProblem(await request(rt.app).options('/api/v1/widget/sessions').set('Origin', evil), 403, 'ERR_FORBIDDEN');
  });

  it('a page on the service\'s own origin: its GETs without Origin are judged by that origin when Sec-Fetch-Site says same-origin, and only then', async () => {
    const own = `http://${new URL(rt.wsUrl).host}`;
    const widget = await widgetOf(await createTenant(), { domain: new URL(rt.wsUrl).hostname });
    const token = (await session(widget.id, { page_url: `${own}/app/widget-test.html` }, own).expect(201)).body.visitor_token;
    const list = () => request(rt.app).get('/api/v1/widget/conversations').set('Authorization', `Bearer ${token}`).set('Host', new URL(rt.wsUrl).host);
    expect((await list().set('Sec-Fetch-Site', 'same-origin').expect(200)).body.data).to.deep.equal([]);
    expectProblem(await list(), 403, 'ERR_FORBIDDEN');
    expectProblem(await list().set('Sec-Fetch-Site', 'cross-site'), 403, 'ERR_FORBIDDEN');
    // Another widget, whose domains do not hold the service's host: refused as from any other origin.
    const elsewhere = (await session((await widgetOf(await createTenant())).id).expect(201)).body.visitor_token;
    expectProblem(
      await request(rt.app).get('/api/v1/widget/conversations').set('Authorization', `Bearer ${elsewhere}`).set('Host', new URL(rt.wsUrl).host).set('Sec-Fetch-Site', 'same-origin'),
      403,
      'ERR_FORBIDDEN',
    );
  });

  it('a visitor never reads another visitor\'s conversation', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const alice = (await session(widget.id).expect(201)).body.visitor_token;
    const bob = (await session(widget.id).expect(201)).body.visitor_token;
    const conv = (await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(alice)).send({ content: 'Alice private' }).expect(201)).body;
    expectProblem(await request(rt.app).get(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(bob)), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(bob)).send({ content: 'hi' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/survey`).set(asVisitor(bob)).send({ rating: 1 }), 404, 'ERR_NOT_FOUND');
    expect((await request(rt.app).get('/api/v1/widget/conversations').set(asVisitor(bob)).expect(200)).body.data).to.deep.equal([]);
    // Another tenant's widget on the same domain cannot reach it either.
    const other = await createTenant();
    const otherWidget = await widgetOf(other);
    const mallory = (await session(otherWidget.id).expect(201)).body.visitor_token;
    expectProblem(await request(rt.app).get(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(mallory)), 404, 'ERR_NOT_FOUND');
  });

  it('a returning visitor keeps their id only with their own token', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const first = (await session(widget.id).expect(201)).body;
    const again = (await session(widget.id, {}, SITE, bearer(first.visitor_token)).expect(201)).body;
    expect(again.visitor_id).to.equal(first.visitor_id);
    const claimed = (await session(widget.id, { visitor_id: first.visitor_id }).expect(201)).body;
    expect(claimed.visitor_id).not.to.equal(first.visitor_id);
  });

  it('identity verification: the HMAC of the e-mail ties the visitor to a contact; a required widget refuses without it', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t, { identityRequired: true });
    expectProblem(await session(widget.id), 403, 'ERR_FORBIDDEN');
    const email = 'grace@example.com';
    expectProblem(await session(widget.id, { user: { email, user_hash: userHash('wrong secret', email) } }), 403, 'ERR_FORBIDDEN');
    const ok = await session(widget.id, { user: { email, name: 'Grace', user_hash: userHash(widget.identity_secret, email) } }).expect(201);
    const visitor = await request(rt.app).get(`/api/v1/visitors/${ok.body.visitor_id}`).set(bearer(t.owner.accessToken)).expect(200);
    expect(visitor.body).to.include({ email, name: 'Grace' });
    expect(visitor.body.contact).to.include({ email });
    await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(ok.body.visitor_token)).send({ content: 'hello' }).expect(201);
    // A widget that starts requiring identity refuses the unverified sessions it had given out, at once.
    const open = await widgetOf(t);
    const anonymous = (await session(open.id).expect(201)).body.visitor_token;
    await request(rt.app).patch(`/api/v1/widgets/${open.id}`).set(bearer(t.owner.accessToken)).send({ identity_required: true }).expect(200);
    expectProblem(await request(rt.app).get('/api/v1/widget/conversations').set(asVisitor(anonymous)), 403, 'ERR_FORBIDDEN');
    // A rotated secret stops old hashes from verifying.
    await request(rt.app).post(`/api/v1/widgets/${widget.id}/identity-secret`).set(bearer(t.owner.accessToken)).expect(200);
    expectProblem(await session(widget.id, { user: { email, user_hash: userHash(widget.identity_secret, email) } }), 403, 'ERR_FORBIDDEN');
  });

  it('the online list changes as visitors come and go; details show pages, contact and conversations', async () => {
    const { database } = await getHarness();
    const t = await createTenant();
    const widget = await widgetOf(t);
    const auth = bearer(t.owner.accessToken);
    const online = async () => (await request(rt.app).get(`/api/v1/visitors?widget_id=${widget.id}`).set(auth).expect(200)).body;
    expect((await online()).data).to.deep.equal([]);
    const a = (await session(widget.id).expect(201)).body;
    const b = (await session(widget.id, { page_url: `${SITE}/cart`, page_title: 'Cart' }).expect(201)).body;
    let list = await online();
    expect(list.data.map((v: { id: string }) => v.id).sort()).to.deep.equal([a.visitor_id, b.visitor_id].sort());
    expect(list.data.find((v: { id: string }) => v.id === b.visitor_id).current_page).to.deep.equal({ url: `${SITE}/cart`, title: 'Cart' });
    // A minute without a page view or a socket, and a visitor is gone from the list.
    await database.withTenant(t.tenantId, (trx) => trx.updateTable('visitors').set({ last_seen_at: new Date(Date.now() - 61_000) }).where('id', '=', a.visitor_id).execute());
    list = await online();
    expect(list.data.map((v: { id: string }) => v.id)).to.deep.equal([b.visitor_id]);
    // A live widget socket brings them back.
    const socket = await connect(`${rt.wsUrl}?visitor_token=${a.visitor_token}`, { Origin: SITE });
    list = await online();
    expect(list.data.map((v: { id: string }) => v.id).sort()).to.deep.equal([a.visitor_id, b.visitor_id].sort());
    socket.close();
    await request(rt.app).post('/api/v1/widget/page-views').set(asVisitor(b.visitor_token)).send({ url: `${SITE}/checkout`, title: 'Checkout' }).expect(201);
    await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(b.visitor_token)).send({ content: 'help' }).expect(201);
    const details = await request(rt.app).get(`/api/v1/visitors/${b.visitor_id}`).set(auth).expect(200);
    expect(details.body.recent_pages.map((p: { url: string }) => p.url)).to.deep.equal([`${SITE}/checkout`, `${SITE}/cart`]);
    expect(details.body).to.include({ widget_id: widget.id, contact: null });
    expect(details.body.conversations).to.have.length(1);
  });

  it('bad input is answered with problem+json: forms, oversized messages, missing fields, a survey with nothing to answer', async () => {
    const t = await createTenant();
    const widget = await widgetOf(t);
    const token = (await session(widget.id).expect(201)).body.visitor_token;
    expectProblem(await session(widget.id, { page_url: 'not a url' }), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ page_url: `${SITE}/` }), 400, 'ERR_VALIDATION');
    expectProblem(await session('wgt_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a80'), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'x'.repeat(10_001) }), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: '' }), 400, 'ERR_VALIDATION');
    const conv = (await request(rt.app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'hi' }).expect(201)).body;
    expectProblem(await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/survey`).set(asVisitor(token)).send({ rating: 4 }), 409, 'ERR_CONFLICT');
    expectProblem(await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/survey`).set(asVisitor(token)).send({ rating: 6 }), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).post(`/api/v1/widget/conversations/${conv.id}/survey`).set(asVisitor(token)).send({ rating: 0 }), 400, 'ERR_VALIDATION');
    expectProblem(await request(rt.app).post('/api/v1/widget/page-views').set(asVisitor('not.a.token')).send({ url: `${SITE}/` }), 401, 'ERR_UNAUTHENTICATED');
  });

  it('tight rate limits: sessions per address, conversations and messages per visitor', async () => {
    const h = await getHarness();
    const app = h.appWith({}, { config: { ...TEST_CONFIG, rateLimits: { ...TEST_CONFIG.rateLimits, widgetSessions: 2, widgetConversations: 1, widgetMessages: 2 } } });
    const t = await createTenant();
    const widget = await widgetOf(t);
    const start = () => request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` });
    const token = (await start().expect(201)).body.visitor_token;
    await start().expect(201);
    expectProblem(await start(), 429, 'ERR_RATE_LIMITED');
    const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'one' }).expect(201)).body;
    expectProblem(await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'two' }), 429, 'ERR_RATE_LIMITED');
    await request(app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(token)).send({ content: 'a' }).expect(201);
    await request(app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(token)).send({ content: 'b' }).expect(201);
    expectProblem(await request(app).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(token)).send({ content: 'c' }), 429, 'ERR_RATE_LIMITED');
  });
});
