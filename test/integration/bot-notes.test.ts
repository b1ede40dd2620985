import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Express } from 'express';
import pino from 'pino';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { BotRunner } from '../../src/bots/bot.runner.ts';
import { EventBus } from '../../src/events/bus.ts';
import type { PresenceStore } from '../../src/presence/presence.ts';
import { type TestTenant, createTenant } from '../support/factories.ts';
import { type Harness, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

// A bot is a third party (issue 46): its key reads and writes what the visitor's side does, and what is
// delivered to it carries no internal note, before and after handoff.

const SITE = 'https://shop.example';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const asVisitor = (token: string) => ({ Authorization: `Bearer ${token}`, Origin: SITE });
const asBot = (t: TestTenant, key: string) => ({ 'X-API-Key': key, 'X-Tenant-ID': t.tenantId });

describe("a bot and the team's internal notes", function () {
  this.timeout(30_000);
  let h: Harness;
  let app: Express;
  let runner: BotRunner;
  let receiver: Receiver;
  let llm: Server;
  let llmUrl: string;
  /** The messages of each chat completion the fake model was asked for. */
  const llmCalls: { role: string; content: string }[][] = [];
  /** Told of each call as it arrives: the sentinel tests wait on. */
  const llmListeners = new Set<() => void>();
  const llmCallWith = (content: string) =>
    new Promise<{ role: string; content: string }[]>((resolve) => {
      const look = () => {
        const call = llmCalls.find((c) => c.some((m) => m.content === content));
        if (!call) return;
        llmListeners.delete(look);
        resolve(call);
      };
      llmListeners.add(look);
      look();
    });

  before(async () => {
    h = await getHarness();
    const bus = new EventBus();
    const presence: PresenceStore = { presenceOf: async (_t, ids) => new Map(ids.map((id) => [id, 'online'])) };
    const built = buildApp({ ...h.deps, bus, presence });
    app = built.app;
    const { messages, conversations, cannedResponses } = built.services;
    runner = new BotRunner({
      database: h.database,
      logger: pino({ level: 'silent' }),
      bus,
      allowPrivate: true,
      timeoutMs: 2000,
      retryDelaysMs: [50],
      pollMs: 50,
      services: { messages, conversations, cannedResponses },
      secrets: h.deps.secrets!,
    });
    runner.start();
    receiver = await startReceiver();
    llm = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        llmCalls.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: { role: string; content: string }[] }).messages);
        for (const listener of [...llmListeners]) listener();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'Happy to help.' } }] }));
      });
    });
    await new Promise<void>((resolve) => llm.listen(0, '127.0.0.1', () => resolve()));
    llmUrl = `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`;
  });

  after(async () => {
    await runner.stop();
    await receiver.close();
    llm.closeAllConnections();
    await new Promise<void>((resolve) => llm.close(() => resolve()));
  });

  async function botConversation(t: TestTenant, bot: Record<string, unknown>, first: string) {
    const auth = bearer(t.owner.accessToken);
    const created = (await request(app).post('/api/v1/bots').set(auth).send(bot).expect(201)).body as Record<string, any>;
    const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Shop', settings: { bot_id: created.id } }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
    const token = session.body.visitor_token as string;
    const conversationId = (await request(app).post('/api/v1/widget/conversations').set(asVisitor(token)).send({ content: first }).expect(201)).body.id as string;
    return { bot: created, token, conversationId, key: asBot(t, created.api_key as string) };
  }

  const note = (t: TestTenant, conversationId: string, content: string) =>
    request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conversationId, content, internal: true }).expect(201);

  it("a webhook bot's key reads no internal note and may not write one; its deliveries carry none, before and after handoff", async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const { bot, token, conversationId, key } = await botConversation(t, { name: 'Shopbot', webhook_url: receiver.url }, 'Where is my order?');
    receiver.secrets.push(bot.secret as string);
    await note(t, conversationId, 'NOTE-1 VIP customer, refund approved');
    await request(app).post(`/api/v1/widget/conversations/${conversationId}/messages`).set(asVisitor(token)).send({ content: 'Order 1234' }).expect(201);
    await receiver.until((got) => got.some((d) => d.verified?.data?.message?.content === 'Order 1234'));

    const readByBot = async () => {
      const list = (await request(app).get(`/api/v1/messages/${conversationId}?limit=100`).set(key).expect(200)).body;
      const conversation = (await request(app).get(`/api/v1/conversations/${conversationId}`).set(key).expect(200)).body;
      return { list, conversation };
    };
    let seen = await readByBot();
    expect(seen.list.data.map((m: { content: string }) => m.content).reverse()).to.deep.equal(['Where is my order?', 'Order 1234']);
    expect(seen.list.data.every((m: { internal: boolean }) => !m.internal)).to.equal(true);
    expect(seen.list.pagination.total, 'the total counts what the bot may see').to.equal(2);
    expect(JSON.stringify(seen.conversation)).to.not.include('NOTE-');

    // Writing a note is refused, whatever else the request says, and nothing is kept.
    const refused = await request(app).post('/api/v1/messages').set(key).send({ conversation_id: conversationId, content: 'NOTE-bot', internal: true });
    expect(expectProblem(refused, 403, 'ERR_FORBIDDEN').detail).to.equal("A bot's key cannot write internal notes: a bot writes what the visitor sees");
    const keyed = await request(app).post('/api/v1/messages').set(key).set('Idempotency-Key', 'k-1').send({ conversation_id: conversationId, content: 'NOTE-bot', internal: true });
    expectProblem(keyed, 403, 'ERR_FORBIDDEN');
    // A message the visitor sees is the bot's to write.
    await request(app).post('/api/v1/messages').set(key).send({ conversation_id: conversationId, content: 'It ships today.', internal: false }).expect(201);

    // Handed off with a note for the team: the bot does not read it back, nor the notes that follow.
    await request(app).post(`/api/v1/conversations/${conversationId}/handoff`).set(key).send({ note: 'NOTE-2 wants a refund' }).expect(200);
    await note(t, conversationId, 'NOTE-3 refund sent');
    seen = await readByBot();
    expect(seen.conversation.bot_state).to.equal('handed_off');
    expect(seen.list.data.map((m: { content: string }) => m.content).reverse()).to.deep.equal([
      'Where is my order?',
      'Order 1234',
      'It ships today.',
      'You are now talking with our team. Someone will be with you shortly.',
    ]);
    expect(JSON.stringify(seen)).to.not.include('NOTE-');
    expectProblem(await request(app).post('/api/v1/messages').set(key).send({ conversation_id: conversationId, content: 'NOTE-bot', internal: true }), 403, 'ERR_FORBIDDEN');

    // The team sees every note (so the checks above had something to miss), and none from the bot.
    const team = (await request(app).get(`/api/v1/messages/${conversationId}?limit=100`).set(auth).expect(200)).body.data as { content: string; internal: boolean }[];
    expect(team.filter((m) => m.internal).map((m) => m.content).reverse()).to.deep.equal(['NOTE-1 VIP customer, refund approved', 'NOTE-2 wants a refund', 'NOTE-3 refund sent']);

    // Deliveries: every one made or queued for this conversation, and every one the receiver got.
    await runner.fanOutOnce();
    const queued = await h.database.asSystem((trx) => trx.selectFrom('bot_deliveries').select(['body']).where('conversation_id', '=', conversationId).execute());
    expect(queued.length).to.be.greaterThan(1);
    for (const { body } of queued) expect(body).to.not.include('NOTE-');
    const delivered = receiver.received.filter((d) => d.verified?.data?.conversation_id === conversationId || d.verified?.data?.id === conversationId);
    expect(delivered.map((d) => d.verified!.type).sort()).to.deep.equal(['conversation.created', 'message.created', 'message.created']);
    for (const d of delivered) expect(d.body).to.not.include('NOTE-');
  });

  it("an llm bot's model is never shown an internal note", async () => {
    const t = await createTenant();
    const { token, conversationId } = await botConversation(t, { name: 'Ada', kind: 'llm', llm: { base_url: llmUrl, model: 'm', api_key: 'k' } }, 'Hi there');
    await note(t, conversationId, 'NOTE-llm angry customer');
    await request(app).post(`/api/v1/widget/conversations/${conversationId}/messages`).set(asVisitor(token)).send({ content: 'Are you there?' }).expect(201);
    // The sentinel: the call that answers the second message (the first call answered the first).
    const turns = await llmCallWith('Are you there?');
    // (The bot's answer to the first may come before or after it: the two are delivered side by side.)
    expect(turns.filter((m) => m.role === 'user').map((m) => m.content)).to.deep.equal(['Hi there', 'Are you there?']);
    expect(JSON.stringify(llmCalls)).to.not.include('NOTE-');
  });
});
