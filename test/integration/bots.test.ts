import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Express } from 'express';
import pino from 'pino';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { BotRunner } from '../../src/bots/bot.runner.ts';
import { decideFaq } from '../../src/bots/faq.ts';
import { HANDOFF_MARKER, createLlmClient, readCompletion } from '../../src/bots/llm.client.ts';
import { EventBus } from '../../src/events/bus.ts';
import { SecretBox } from '../../src/shared/secret-box.ts';
import type { PresenceStore } from '../../src/presence/presence.ts';
import { type TestTenant, addMember, createConversation, createTenant, login } from '../support/factories.ts';
import { type Harness, TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const SITE = 'https://shop.example';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const asVisitor = (token: string) => ({ Authorization: `Bearer ${token}`, Origin: SITE });
const asBot = (t: TestTenant, key: string) => ({ 'X-API-Key': key, 'X-Tenant-ID': t.tenantId });

/** A fake OpenAI-compatible endpoint on loopback: records each request, answers as `answer` says. */
interface FakeLlm {
  url: string;
  requests: { headers: IncomingHttpHeaders; body: Record<string, any> }[];
  answer: (body: Record<string, any>) => { status: number; json?: unknown } | 'hang';
  close(): Promise<void>;
}

async function startFakeLlm(): Promise<FakeLlm> {
  const hanging = new Set<() => void>();
  const fake: FakeLlm = {
    url: '',
    requests: [],
    answer: () => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: 'Hello!' } }] } }),
    close: async () => {
      for (const release of hanging) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, any>;
      fake.requests.push({ headers: req.headers, body });
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const answer = fake.answer(body);
      if (answer === 'hang') {
        const release = () => {
          hanging.delete(release);
          res.destroy();
        };
        hanging.add(release);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.json ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

describe('bots', function () {
  this.timeout(30_000);
  let h: Harness;
  let app: Express;
  let runner: BotRunner;
  let llm: FakeLlm;
  const receivers: Receiver[] = [];
  /** Members the fake presence reports online. */
  const online = new Set<string>();

  before(async () => {
    h = await getHarness();
    const bus = new EventBus();
    const presence: PresenceStore = { presenceOf: async (_t, ids) => new Map(ids.map((id) => [id, online.has(id) ? 'online' : 'offline'])) };
    const built = buildApp({ ...h.deps, bus, presence });
    app = built.app;
    const { messages, conversations, cannedResponses } = built.services;
    runner = new BotRunner({
      database: h.database,
      logger: pino({ level: 'silent' }),
      bus,
      allowPrivate: true,
      timeoutMs: 2000,
      retryDelaysMs: [50, 100],
      pollMs: 50,
      services: { messages, conversations, cannedResponses },
      secrets: h.deps.secrets!,
    });
    runner.start();
    llm = await startFakeLlm();
  });

  after(async () => {
    await runner.stop();
    await llm.close();
    for (const r of receivers.splice(0)) await r.close();
  });

  async function widgetWithBot(t: TestTenant, botId: string) {
    const auth = bearer(t.owner.accessToken);
    const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Shop', settings: { bot_id: botId } }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
    return { widgetId: widget.id as string, token: session.body.visitor_token as string };
  }

  async function createBot(t: TestTenant, body: Record<string, unknown>) {
    return (await request(app).post('/api/v1/bots').set(bearer(t.owner.accessToken)).send(body).expect(201)).body as Record<string, any>;
  }

  const storedLlmKey = async (botId: string) =>
    ((await h.database.asSystem((trx) => trx.selectFrom('bots').select('settings').where('id', '=', botId).executeTakeFirstOrThrow())).settings as { llm: { api_key: string } }).llm
      .api_key;

  /** Writes an llm bot's stored key as it is given (sealed under another key, or in the clear as before sealing). */
  const storeLlmKey = (botId: string, apiKey: string) =>
    h.database.asSystem(async (trx) => {
      const { settings } = await trx.selectFrom('bots').select('settings').where('id', '=', botId).executeTakeFirstOrThrow();
      const llmSettings = (settings as { llm: Record<string, unknown> }).llm;
      await trx
        .updateTable('bots')
        .set({ settings: JSON.stringify({ ...(settings as object), llm: { ...llmSettings, api_key: apiKey } }) as never })
        .where('id', '=', botId)
        .execute();
    });

  const conversationOf = async (t: TestTenant, id: string) =>
    (await request(app).get(`/api/v1/conversations/${id}`).set(bearer(t.owner.accessToken)).expect(200)).body as Record<string, any>;

  const visitorMessages = async (token: string, conversationId: string) =>
    (await request(app).get(`/api/v1/widget/conversations/${conversationId}/messages?limit=100`).set(asVisitor(token)).expect(200)).body.data.reverse() as Record<string, any>[];

  const feed = async (t: TestTenant) =>
    (await request(app).get('/api/v1/events?limit=100').set(bearer(t.owner.accessToken)).expect(200)).body.data as Record<string, any>[];

  describe('managing bots', () => {
    it('create answers the key and secret once; the LLM key is never shown; list, get, update, delete', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const created = await createBot(t, { name: 'Assistant', kind: 'llm', llm: { base_url: llm.url, model: 'm1', api_key: 'sk-secret-1' } });
      expect(created.id).to.match(/^bot_/);
      expect(created.api_key).to.match(/^chat_/);
      expect(created.secret).to.match(/^whsec_/);
      expect(created.llm).to.deep.equal({ base_url: llm.url, model: 'm1', system_prompt: null, timeout_ms: 5000, api_key_set: true });
      const got = await request(app).get(`/api/v1/bots/${created.id}`).set(auth).expect(200);
      expect(got.body).to.not.have.property('api_key');
      expect(got.body).to.not.have.property('secret');
      expect(JSON.stringify(got.body)).to.not.include('sk-secret-1');
      const list = await request(app).get('/api/v1/bots').set(auth).expect(200);
      expect(list.body.data.map((b: { id: string }) => b.id)).to.deep.equal([created.id]);
      expect(JSON.stringify(list.body)).to.not.include('sk-secret-1');
      const updated = await request(app).patch(`/api/v1/bots/${created.id}`).set(auth).send({ name: 'Ada', llm: { model: 'm2', api_key: 'sk-secret-2' } }).expect(200);
      expect(updated.body).to.include({ name: 'Ada' });
      expect(updated.body.llm).to.include({ model: 'm2', base_url: llm.url, api_key_set: true });
      expect(JSON.stringify(updated.body)).to.not.include('sk-secret-2');
      // Stored sealed: a copy of the database does not hold the key.
      const stored = await storedLlmKey(created.id as string);
      expect(stored).to.match(/^sealed:v1:/);
      expect(stored).to.not.include('sk-secret-2');
      expect(h.deps.secrets!.open(stored)).to.equal('sk-secret-2');
      // The bot's key is the bot's: not among the tenant's API keys, not revocable there.
      const keys = await request(app).get('/api/v1/api-keys').set(auth).expect(200);
      expect(keys.body.data).to.deep.equal([]);
      await request(app).delete(`/api/v1/bots/${created.id}`).set(auth).expect(200);
      expectProblem(await request(app).get(`/api/v1/bots/${created.id}`).set(auth), 404, 'ERR_NOT_FOUND');
      // Its key went with it.
      expectProblem(await request(app).get('/api/v1/messages/conv_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a70').set(asBot(t, created.api_key)), 401, 'ERR_UNAUTHENTICATED');
    });

    it('refuses agents, API keys, incomplete kinds, foreign departments and addresses the webhook rule refuses', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const agent = await addMember(t);
      expectProblem(await request(app).get('/api/v1/bots').set(bearer(await login(agent.email))), 403, 'ERR_FORBIDDEN');
      const key = (await request(app).post('/api/v1/api-keys').set(auth).send({ name: 'k', scopes: ['conversations:read'] }).expect(201)).body.key;
      expectProblem(await request(app).get('/api/v1/bots').set(asBot(t, key)), 403, 'ERR_USER_TOKEN_REQUIRED');
      const noUrl = expectProblem(await request(app).post('/api/v1/bots').set(auth).send({ name: 'W' }), 400, 'ERR_VALIDATION');
      expect(noUrl.errors).to.deep.equal([{ path: '/body/webhook_url', message: 'is required for a webhook bot' }]);
      expectProblem(await request(app).post('/api/v1/bots').set(auth).send({ name: 'L', kind: 'llm' }), 400, 'ERR_VALIDATION');
      expectProblem(await request(app).post('/api/v1/bots').set(auth).send({ name: 'F', kind: 'faq', llm: { base_url: llm.url, model: 'm', api_key: 'k' } }), 400, 'ERR_VALIDATION');
      const other = await createTenant();
      const theirDept = (await request(app).post('/api/v1/departments').set(bearer(other.owner.accessToken)).send({ name: 'Theirs' }).expect(201)).body.id;
      expectProblem(await request(app).post('/api/v1/bots').set(auth).send({ name: 'F', kind: 'faq', handoff_department_id: theirDept }), 422, 'ERR_INVALID_DEPARTMENT');
      // The same address rule as webhooks: an app that does not allow private addresses refuses loopback and private ones.
      const strict = buildApp({ ...h.deps, config: { ...TEST_CONFIG, webhooks: { allowPrivate: false, requireHttps: false } } }).app;
      const loop = expectProblem(await request(strict).post('/api/v1/bots').set(auth).send({ name: 'W', webhook_url: 'http://127.0.0.1:9/hook' }), 400, 'ERR_VALIDATION');
      expect(loop.errors[0].path).to.equal('/body/webhook_url');
      const priv = expectProblem(
        await request(strict).post('/api/v1/bots').set(auth).send({ name: 'L', kind: 'llm', llm: { base_url: 'http://10.0.0.8/v1', model: 'm', api_key: 'k' } }),
        400,
        'ERR_VALIDATION',
      );
      expect(priv.errors[0].path).to.equal('/body/llm/base_url');
    });

    it("a widget's settings.bot_id must name an enabled bot of the tenant", async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const other = await createTenant();
      const theirs = await createBot(other, { name: 'Theirs', kind: 'faq' });
      const unknown = expectProblem(await request(app).post('/api/v1/widgets').set(auth).send({ name: 'S', settings: { bot_id: theirs.id } }), 400, 'ERR_VALIDATION');
      expect(unknown.errors).to.deep.equal([{ path: '/body/settings/bot_id', message: 'names no bot of this account' }]);
      const mine = await createBot(t, { name: 'Mine', kind: 'faq', enabled: false });
      const disabled = expectProblem(await request(app).post('/api/v1/widgets').set(auth).send({ name: 'S', settings: { bot_id: mine.id } }), 400, 'ERR_VALIDATION');
      expect(disabled.errors).to.deep.equal([{ path: '/body/settings/bot_id', message: 'names a disabled bot' }]);
      await request(app).patch(`/api/v1/bots/${mine.id}`).set(auth).send({ enabled: true }).expect(200);
      const widget = await request(app).post('/api/v1/widgets').set(auth).send({ name: 'S' }).expect(201);
      const patched = await request(app).patch(`/api/v1/widgets/${widget.body.id}`).set(auth).send({ settings: { bot_id: mine.id } }).expect(200);
      expect(patched.body.settings.bot_id).to.equal(mine.id);
    });
  });

  describe('a webhook bot', () => {
    it('takes a widget conversation, answers over its key, hands off to an online agent, who answers; reopen keeps handed_off', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const away = await addMember(t);
      const agent = await addMember(t);
      online.add(agent.userId);
      const agentToken = await login(agent.email);
      const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: 'Support', member_ids: [away.userId, agent.userId] }).expect(201)).body.id;
      const receiver = await startReceiver();
      receivers.push(receiver);
      const bot = await createBot(t, { name: 'Shopbot', webhook_url: receiver.url, avatar_url: 'https://cdn.example.com/bot.png', handoff_department_id: dept });
      receiver.secrets.push(bot.secret);
      const { token } = await widgetWithBot(t, bot.id);

      // The visitor writes: the bot holds the conversation, nobody of the team is picked.
      const started = await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'Do you ship to Norway?' }).expect(201);
      const conversationId = started.body.id as string;
      const held = await conversationOf(t, conversationId);
      expect(held).to.include({ bot_state: 'active', status: 'open', assigned_user_id: null });

      // The bot hears of it, signed with its secret: the conversation's start and the visitor's message
      // (delivered side by side, so in either order).
      await receiver.until((got) => ['conversation.created', 'message.created'].every((type) => got.some((d) => d.verified?.type === type)));
      expect(receiver.received.every((d) => d.verified)).to.equal(true);
      const types = receiver.received.map((d) => d.verified!.type);
      expect(types).to.include.members(['conversation.created', 'message.created']);
      const heard = receiver.received.find((d) => d.verified!.type === 'message.created')!.verified!;
      expect(heard.data).to.include({ conversation_id: conversationId });
      expect(heard.data.message).to.include({ content: 'Do you ship to Norway?', sender_type: 'visitor' });

      // It answers under its key, as itself.
      const key = asBot(t, bot.api_key);
      const answer = await request(app).post('/api/v1/messages').set(key).send({ conversation_id: conversationId, content: 'Yes, in 3 days.' }).expect(201);
      expect(answer.body).to.include({ sender_type: 'bot', sender_id: bot.id });
      expect(answer.body.author).to.deep.equal({ type: 'bot', id: bot.id, name: 'Shopbot', avatar_url: 'https://cdn.example.com/bot.png' });
      // The bot reads its conversation and its messages.
      await request(app).get(`/api/v1/conversations/${conversationId}`).set(key).expect(200);
      const seenByBot = await request(app).get(`/api/v1/messages/${conversationId}`).set(key).expect(200);
      expect(seenByBot.body.data.map((m: { content: string }) => m.content)).to.include('Yes, in 3 days.');

      // The visitor sees the bot's name, as they would an agent's message, but named.
      let shown = await visitorMessages(token, conversationId);
      const fromBot = shown.find((m) => m.content === 'Yes, in 3 days.')!;
      expect(fromBot.sender_type).to.equal('bot');
      expect(fromBot.author).to.include({ type: 'bot', name: 'Shopbot' });

      // The visitor asks for a person; the bot hears it and hands off.
      await request(app).post(`/api/v1/widget/conversations/${conversationId}/messages`).set(asVisitor(token)).send({ content: 'Can I talk to a person?' }).expect(201);
      await receiver.until((got) => got.some((d) => d.verified?.data?.message?.content === 'Can I talk to a person?'));
      const handedOff = await request(app).post(`/api/v1/conversations/${conversationId}/handoff`).set(key).send({ note: 'Wants a person' }).expect(200);
      expect(handedOff.body.message).to.equal('Conversation handed off');
      // The online agent of the bot's department is picked over the offline one.
      expect(handedOff.body.conversation).to.include({ bot_state: 'handed_off', status: 'assigned', assigned_user_id: agent.userId, department_id: dept });
      const event = (await feed(t)).find((e) => e.type === 'conversation.handed_off');
      expect(event!.data).to.deep.equal({ conversation_id: conversationId, bot_id: bot.id, by: 'bot', assigned_user_id: agent.userId, department_id: dept });

      // Once handed off the bot may not speak or hand off again, and hears no more.
      expectProblem(await request(app).post('/api/v1/messages').set(key).send({ conversation_id: conversationId, content: 'Still here' }), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).post(`/api/v1/conversations/${conversationId}/handoff`).set(key), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).post(`/api/v1/conversations/${conversationId}/handoff`).set(auth), 409, 'ERR_CONFLICT');
      await request(app).post(`/api/v1/widget/conversations/${conversationId}/messages`).set(asVisitor(token)).send({ content: 'Hello?' }).expect(201);
      await runner.fanOutOnce();
      const queued = await h.database.asSystem((trx) => trx.selectFrom('bot_deliveries').select(['event_type', 'body']).where('conversation_id', '=', conversationId).execute());
      expect(queued.map((q) => JSON.parse(q.body).data.message?.content ?? q.event_type).sort()).to.deep.equal(['Can I talk to a person?', 'Do you ship to Norway?', 'conversation.created']);

      // The agent answers; the visitor sees it unnamed.
      await request(app).post('/api/v1/messages').set(bearer(agentToken)).send({ conversation_id: conversationId, content: 'Hi, I am here.' }).expect(201);
      shown = await visitorMessages(token, conversationId);
      const fromAgent = shown.find((m) => m.content === 'Hi, I am here.')!;
      expect(fromAgent).to.include({ sender_type: 'user', sender_id: null });
      expect(fromAgent).to.not.have.property('author');
      expect(shown.map((m) => m.content)).to.include('You are now talking with our team. Someone will be with you shortly.');
      expect(shown.map((m) => m.content)).to.not.include('Wants a person');

      // Close, reopen: the bot state stays handed_off.
      await request(app).post(`/api/v1/conversations/${conversationId}/close`).set(bearer(agentToken)).expect(200);
      const reopened = await request(app).post(`/api/v1/conversations/${conversationId}/reopen`).set(bearer(agentToken)).expect(200);
      expect(reopened.body.conversation).to.include({ status: 'open', bot_state: 'handed_off' });
    });

    it('rotate-key: the new key works, the old is refused at once; rotate-secret: both secrets sign for a day, then only the new', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const receiver = await startReceiver();
      receivers.push(receiver);
      const bot = await createBot(t, { name: 'Rotating', webhook_url: receiver.url });
      const { token } = await widgetWithBot(t, bot.id);

      const rotated = (await request(app).post(`/api/v1/bots/${bot.id}/rotate-secret`).set(auth).expect(200)).body;
      expect(rotated.secret).to.match(/^whsec_/).and.not.equal(bot.secret);
      expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).to.be.closeTo(24 * 3_600_000, 60_000);
      receiver.secrets.push(bot.secret, rotated.secret);
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'During the overlap' }).expect(201)).body.id as string;
      await receiver.until((got) => got.some((d) => d.verified?.type === 'message.created'));
      for (const d of receiver.received) expect(d.verifiedBy, 'signed by the old secret and the new').to.have.members([bot.secret, rotated.secret]);

      // The overlap ends: only the new secret signs.
      await h.database.asSystem((trx) => trx.updateTable('bots').set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).where('id', '=', bot.id).execute());
      await request(app).post(`/api/v1/widget/conversations/${conv}/messages`).set(asVisitor(token)).send({ content: 'After the overlap' }).expect(201);
      await receiver.until((got) => got.some((d) => d.verified?.data?.message?.content === 'After the overlap'));
      const after = receiver.received.filter((d) => d.verified?.data?.message?.content === 'After the overlap');
      for (const d of after) expect(d.verifiedBy).to.deep.equal([rotated.secret]);

      const key = (await request(app).post(`/api/v1/bots/${bot.id}/rotate-key`).set(auth).expect(200)).body;
      expect(key.api_key).to.match(/^chat_/).and.not.equal(bot.api_key);
      expectProblem(await request(app).get(`/api/v1/messages/${conv}`).set(asBot(t, bot.api_key)), 401, 'ERR_UNAUTHENTICATED');
      await request(app).get(`/api/v1/messages/${conv}`).set(asBot(t, key.api_key)).expect(200);
      // Another tenant's bot, or none: not found.
      const other = await createTenant();
      expectProblem(await request(app).post(`/api/v1/bots/${bot.id}/rotate-key`).set(bearer(other.owner.accessToken)), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).post(`/api/v1/bots/${bot.id}/rotate-secret`).set(bearer(other.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    });

    it('retries a delivery its receiver refused, under the same webhook-id', async () => {
      const t = await createTenant();
      let requests = 0;
      const receiver = await startReceiver({ behave: () => (++requests <= 2 ? 503 : 'ok') });
      receivers.push(receiver);
      const bot = await createBot(t, { name: 'B', webhook_url: receiver.url });
      receiver.secrets.push(bot.secret);
      const { token } = await widgetWithBot(t, bot.id);
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'hi' }).expect(201)).body.id;
      const rows = await eventually(async () => {
        const list = await h.database.asSystem((trx) => trx.selectFrom('bot_deliveries').selectAll().where('conversation_id', '=', conv).execute());
        return list.length === 2 && list.every((d) => d.status === 'succeeded') && list;
      }, 'both deliveries to succeed');
      expect(rows.reduce((n, d) => n + d.attempts, 0)).to.equal(4);
      const ok = receiver.received.filter((d) => d.answered === 200);
      expect(new Set(ok.map((d) => d.id)).size).to.equal(2);
      for (const d of receiver.received) expect(d.verified, 'signed on every attempt').to.be.an('object');
      for (const refused of receiver.received.filter((d) => d.answered === 503)) expect(ok.map((d) => d.id)).to.include(refused.id);
    });

    it("an agent's assign or transfer of a bot's conversation hands it off", async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const receiver = await startReceiver();
      receivers.push(receiver);
      const bot = await createBot(t, { name: 'B', webhook_url: receiver.url });
      const { token } = await widgetWithBot(t, bot.id);
      const first = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'one' }).expect(201)).body.id;
      const second = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'two' }).expect(201)).body.id;
      const assigned = await request(app).post(`/api/v1/conversations/${first}/assign`).set(auth).send({ user_id: t.owner.userId }).expect(200);
      expect(assigned.body.conversation).to.include({ bot_state: 'handed_off', assigned_user_id: t.owner.userId });
      const agent = await addMember(t);
      const transferred = await request(app).post(`/api/v1/conversations/${second}/transfer`).set(auth).send({ user_id: agent.userId }).expect(200);
      expect(transferred.body.conversation).to.include({ bot_state: 'handed_off', assigned_user_id: agent.userId });
      const events = (await feed(t)).filter((e) => e.type === 'conversation.handed_off');
      expect(events.map((e) => [e.data.conversation_id, e.data.by, e.data.assigned_user_id]).sort()).to.deep.equal(
        [
          [first, 'member', t.owner.userId],
          [second, 'member', agent.userId],
        ].sort(),
      );
    });

    it("the bot's key does only what a bot may", async () => {
      const t = await createTenant();
      const receiver = await startReceiver();
      receivers.push(receiver);
      const bot = await createBot(t, { name: 'B', webhook_url: receiver.url });
      const key = asBot(t, bot.api_key);
      const { token } = await widgetWithBot(t, bot.id);
      const mine = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'hi' }).expect(201)).body.id;
      const notMine = await createConversation(t, {}, t.owner.accessToken, app);
      // No transfers, reopenings, assignments, member or key management, no reading the tenant at large.
      expectProblem(await request(app).post(`/api/v1/conversations/${mine}/transfer`).set(key).send({ user_id: t.owner.userId }), 403, 'ERR_USER_TOKEN_REQUIRED');
      expectProblem(await request(app).post(`/api/v1/conversations/${mine}/assign`).set(key).send({ user_id: t.owner.userId }), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).post(`/api/v1/conversations/${mine}/close`).set(key), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).post(`/api/v1/tenants/${t.tenantId}/members`).set(key).send({ email: 'x@example.test', role: 'agent' }), 403, 'ERR_USER_TOKEN_REQUIRED');
      expectProblem(await request(app).post('/api/v1/api-keys').set(key).send({ name: 'k', scopes: ['conversations:read'] }), 403, 'ERR_USER_TOKEN_REQUIRED');
      expectProblem(await request(app).get('/api/v1/conversations').set(key), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).get('/api/v1/events').set(key), 403, 'ERR_FORBIDDEN');
      // Conversations it was never given do not exist for it.
      expectProblem(await request(app).get(`/api/v1/conversations/${notMine.id}`).set(key), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).get(`/api/v1/messages/${notMine.id}`).set(key), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).post('/api/v1/messages').set(key).send({ conversation_id: notMine.id, content: 'x' }), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).post(`/api/v1/conversations/${notMine.id}/handoff`).set(key), 404, 'ERR_NOT_FOUND');
      // Nor can the tenant's API-key list revoke it.
      const keyRow = await h.database.asSystem((trx) => trx.selectFrom('api_keys').select('id').where('bot_id', '=', bot.id).executeTakeFirstOrThrow());
      expectProblem(await request(app).delete(`/api/v1/api-keys/${keyRow.id}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    });
  });

  describe('the faq bot', () => {
    it('decides by shortcut, title, word overlap, a request for a person, or nothing', () => {
      const entries = [
        { shortcut: 'shipping', title: 'Shipping costs', content: 'Shipping is free over 50 euros; delivery takes 3 days.' },
        { shortcut: 'returns', title: 'Returns', content: 'You can return any item within 30 days for a refund.' },
      ];
      expect(decideFaq('/returns', entries)).to.deep.include({ kind: 'answer', by: 'shortcut', entry: entries[1] });
      expect(decideFaq('SHIPPING', entries)).to.deep.include({ kind: 'answer', by: 'shortcut' });
      expect(decideFaq('What are your shipping costs, please?', entries)).to.deep.include({ kind: 'answer', by: 'title', entry: entries[0] });
      expect(decideFaq('How many days for a refund?', entries)).to.deep.include({ kind: 'answer', by: 'words', entry: entries[1] });
      expect(decideFaq('I want to talk to a human about shipping', entries)).to.deep.equal({ kind: 'handoff', reason: 'asked_for_person' });
      expect(decideFaq('Is the blue sweater made of wool?', entries)).to.deep.equal({ kind: 'handoff', reason: 'no_match' });
      expect(decideFaq('hello', [])).to.deep.equal({ kind: 'handoff', reason: 'no_match' });
    });

    it('answers from the canned responses through the widget, and hands off when nothing matches', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'shipping', title: 'Shipping costs', content: 'Shipping is free over 50 euros.' }).expect(201);
      await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'returns', title: 'Returns', content: 'Returns are free within 30 days.' }).expect(201);
      const bot = await createBot(t, { name: 'FAQ', kind: 'faq' });
      const { token } = await widgetWithBot(t, bot.id);
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'What are the shipping costs?' }).expect(201)).body.id;
      await eventually(async () => (await visitorMessages(token, conv)).some((m) => m.content === 'Shipping is free over 50 euros.'), 'the faq answer');
      await request(app).post(`/api/v1/widget/conversations/${conv}/messages`).set(asVisitor(token)).send({ content: '/returns' }).expect(201);
      await eventually(async () => (await visitorMessages(token, conv)).some((m) => m.content === 'Returns are free within 30 days.'), 'the shortcut answer');
      const answers = (await visitorMessages(token, conv)).filter((m) => m.sender_type === 'bot');
      expect(answers.map((m) => m.author.name)).to.deep.equal(['FAQ', 'FAQ']);
      expect((await conversationOf(t, conv)).bot_state).to.equal('active');
      await request(app).post(`/api/v1/widget/conversations/${conv}/messages`).set(asVisitor(token)).send({ content: 'Is the blue sweater made of wool?' }).expect(201);
      const after = await eventually(async () => {
        const c = await conversationOf(t, conv);
        return c.bot_state === 'handed_off' && c;
      }, 'the handoff');
      // The whole team is asked: the owner is its one full-seat member.
      expect(after).to.include({ status: 'assigned', assigned_user_id: t.owner.userId });
      const notes = (await request(app).get(`/api/v1/messages/${conv}`).set(auth).expect(200)).body.data.filter((m: { internal: boolean }) => m.internal);
      expect(notes.map((m: { content: string }) => m.content)).to.deep.equal(['The FAQ bot found no answer.']);
    });

    it('hands off when the visitor asks for a person', async () => {
      const t = await createTenant();
      const bot = await createBot(t, { name: 'FAQ', kind: 'faq' });
      const { token } = await widgetWithBot(t, bot.id);
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: 'Let me speak to an agent' }).expect(201)).body.id;
      await eventually(async () => (await conversationOf(t, conv)).bot_state === 'handed_off', 'the handoff');
      const event = (await feed(t)).find((e) => e.type === 'conversation.handed_off');
      expect(event!.data).to.include({ conversation_id: conv, by: 'bot', bot_id: bot.id });
    });
  });

  describe('the llm bot', () => {
    afterEach(() => {
      llm.answer = () => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: 'Hello!' } }] } });
    });

    async function llmConversation(settings: Record<string, unknown> = {}, first = 'Where is my order?') {
      const t = await createTenant();
      const bot = await createBot(t, { name: 'Ada', kind: 'llm', llm: { base_url: llm.url, model: 'tiny', api_key: 'sk-test', system_prompt: 'Be brief.', ...settings } });
      const { token } = await widgetWithBot(t, bot.id);
      const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: first }).expect(201)).body.id as string;
      return { t, bot, token, conv };
    }

    const handedOff = async (t: TestTenant, conv: string) =>
      eventually(async () => {
        const c = await conversationOf(t, conv);
        return c.bot_state === 'handed_off' && c;
      }, 'the handoff');

    const notesOf = async (t: TestTenant, conv: string) =>
      (await request(app).get(`/api/v1/messages/${conv}`).set(bearer(t.owner.accessToken)).expect(200)).body.data
        .filter((m: { internal: boolean }) => m.internal)
        .map((m: { content: string }) => m.content);

    it('answers with the conversation as context, under its key and model', async () => {
      llm.answer = (body) => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: `Echo: ${body.messages.at(-1).content}` } }] } });
      const { t, token, conv } = await llmConversation();
      await eventually(async () => (await visitorMessages(token, conv)).some((m) => m.content === 'Echo: Where is my order?'), 'the first answer');
      await request(app).post(`/api/v1/widget/conversations/${conv}/messages`).set(asVisitor(token)).send({ content: 'It is order 42' }).expect(201);
      await eventually(async () => (await visitorMessages(token, conv)).some((m) => m.content === 'Echo: It is order 42'), 'the second answer');
      const last = llm.requests.filter((r) => r.body.messages.at(-1).content === 'It is order 42').at(-1)!;
      expect(last.headers.authorization).to.equal('Bearer sk-test');
      expect(last.body.model).to.equal('tiny');
      expect(last.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).to.deep.equal(['handoff']);
      expect(last.body.messages).to.deep.equal([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Where is my order?' },
        { role: 'assistant', content: 'Echo: Where is my order?' },
        { role: 'user', content: 'It is order 42' },
      ]);
      expect((await conversationOf(t, conv)).bot_state).to.equal('active');
    });

    it('hands off when the model calls handoff, or answers the marker', async () => {
      llm.answer = () => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'handoff', arguments: '{}' } }] } }] } });
      const called = await llmConversation({}, 'I need a refund');
      await handedOff(called.t, called.conv);
      expect(await notesOf(called.t, called.conv)).to.deep.equal(['The LLM bot handed off: the model called handoff.']);
      llm.answer = () => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: HANDOFF_MARKER } }] } });
      const marked = await llmConversation({}, 'Something odd');
      await handedOff(marked.t, marked.conv);
    });

    it('a key stored before sealing still works; one sealed under another SECRETS_KEY hands off, the provider never asked', async () => {
      llm.answer = (body) => ({ status: 200, json: { choices: [{ message: { role: 'assistant', content: `Echo: ${body.messages.at(-1).content}` } }] } });
      const start = async (apiKey: string, first: string) => {
        const t = await createTenant();
        const bot = await createBot(t, { name: 'Ada', kind: 'llm', llm: { base_url: llm.url, model: 'tiny', api_key: 'sk-replaced' } });
        await storeLlmKey(bot.id, apiKey);
        const { token } = await widgetWithBot(t, bot.id);
        const conv = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: first }).expect(201)).body.id as string;
        return { t, token, conv };
      };
      const legacy = await start('sk-in-the-clear', 'Legacy key?');
      await eventually(async () => (await visitorMessages(legacy.token, legacy.conv)).some((m) => m.content === 'Echo: Legacy key?'), 'the answer');
      expect(llm.requests.find((r) => r.body.messages.at(-1).content === 'Legacy key?')!.headers.authorization).to.equal('Bearer sk-in-the-clear');
      const foreign = await start(new SecretBox('another SECRETS_KEY, not this service').seal('sk-lost'), 'Foreign key?');
      await handedOff(foreign.t, foreign.conv);
      expect(await notesOf(foreign.t, foreign.conv)).to.deep.equal(['The LLM bot cannot read its API key.']);
      expect(llm.requests.some((r) => r.body.messages.at(-1).content === 'Foreign key?')).to.equal(false);
    });

    it('hands off when the model fails, or does not answer in time', async () => {
      llm.answer = () => ({ status: 500, json: { error: 'overloaded' } });
      const failed = await llmConversation();
      await handedOff(failed.t, failed.conv);
      expect(await notesOf(failed.t, failed.conv)).to.deep.equal(['The LLM bot handed off: the model answered 500.']);
      llm.answer = () => 'hang';
      const slow = await llmConversation({ timeout_ms: 300 });
      await handedOff(slow.t, slow.conv);
      expect(await notesOf(slow.t, slow.conv)).to.deep.equal(['The LLM bot handed off: no answer within 300 ms.']);
    });

    it('reads completions strictly, and its client refuses loopback unless private addresses are allowed', async () => {
      expect(readCompletion('{"choices":[{"message":{"content":" Hi "}}]}')).to.deep.equal({ kind: 'reply', content: 'Hi' });
      expect(readCompletion('not json').kind).to.equal('handoff');
      expect(readCompletion('{"choices":[]}').kind).to.equal('handoff');
      expect(readCompletion('{"choices":[{"message":{"content":""}}]}').kind).to.equal('handoff');
      const strict = createLlmClient({ allowPrivate: false });
      try {
        const before = llm.requests.length;
        const outcome = await strict.complete({ base_url: llm.url, model: 'm', api_key: 'k', timeout_ms: 2000 }, [{ role: 'user', content: 'hi' }]);
        expect(outcome.kind).to.equal('handoff');
        expect(outcome.kind === 'handoff' && outcome.reason).to.match(/not allowed|127\.0\.0\.1/);
        expect(llm.requests.length, 'nothing reached the loopback server').to.equal(before);
      } finally {
        strict.close();
      }
    });
  });
});
