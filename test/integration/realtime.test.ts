import { expect } from 'chai';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { TokenService } from '../../src/auth/tokens.ts';
import { sql } from 'kysely';
import { openRedis } from '../../src/redis/link.ts';
import { EventBus } from '../../src/events/bus.ts';
import { inTenantTransaction, writeEvent } from '../../src/events/outbox.ts';
import { RedisFanout } from '../../src/realtime/fanout.ts';
import { CLOSE } from '../../src/realtime/gateway.ts';
import { newId } from '../../src/shared/ids.ts';
import { addMember, createConversation, createTenant, createVisitor, login, type TestTenant } from '../support/factories.ts';
import { TEST_JWT_SECRET, getHarness } from '../support/harness.ts';
import { type Client, connect, contractErrors, EVENT_TYPES, type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { eventually } from '../support/eventually.ts';
import { WebSocket } from 'ws';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const isEvent = (type: string) => (f: Record<string, any>) => f.type === type;

describe('realtime gateway', function () {
  this.timeout(30_000);
  let rt: RealtimeServer;
  const clients: Client[] = [];
  const open = async (...args: Parameters<typeof connect>) => {
    const c = await connect(...args);
    clients.push(c);
    return c;
  };

  before(async () => {
    rt = await startRealtime();
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.ws.terminate();
  });
  after(async () => {
    await rt.close();
  });

  async function visitorToken(t: TestTenant, visitorId: string) {
    const { deps } = await getHarness();
    return deps.tokens.signVisitorToken({ visitorId, tenantId: t.tenantId });
  }

  describe('connecting', () => {
    it('a member connects with a bearer token and is welcomed', async () => {
      const t = await createTenant();
      const c = await open(rt.wsUrl, bearer(t.owner.accessToken));
      expect(c.frames[0]).to.include({ type: 'welcome', audience: 'member', heartbeat_seconds: 30 });
    });

    it('an upgrade without a credential, or a bad one, is refused before any socket exists', async () => {
      const t = await createTenant();
      for (const headers of [{}, bearer('nonsense'), bearer(jwt.sign({ sub: 'x' }, 'wrong-secret'))]) {
        const err = await connect(rt.wsUrl, headers).then(() => null, (e: { status?: number }) => e);
        expect(err?.status).to.equal(401);
      }
      const wrongPath = await connect(rt.wsUrl.replace('/ws', '/wsx'), bearer(t.owner.accessToken)).then(() => null, (e: { status?: number }) => e);
      expect(wrongPath?.status).to.equal(404);
    });

    it('browsers use a single-use ticket from POST /v1/ws/tickets', async () => {
      const t = await createTenant();
      const res = await request(rt.app).post('/api/v1/ws/tickets').set(bearer(t.owner.accessToken)).expect(201);
      expect(Date.parse(res.body.expires_at) - Date.now()).to.be.within(25_000, 31_000);
      const c = await open(`${rt.wsUrl}?ticket=${res.body.ticket}`);
      expect(c.frames[0]).to.include({ audience: 'member' });
      const again = await connect(`${rt.wsUrl}?ticket=${res.body.ticket}`).then(() => null, (e: { status?: number }) => e);
      expect(again?.status).to.equal(401);
    });

    it('an API key with X-Tenant-ID connects as an integration; without conversations:read it is refused', async () => {
      const t = await createTenant();
      const key = async (scopes: string[]) =>
        (await request(rt.app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'ws', scopes }).expect(201)).body.key;
      const c = await open(rt.wsUrl, { 'X-API-Key': await key(['conversations:read']), 'X-Tenant-ID': t.tenantId });
      expect(c.frames[0]).to.include({ audience: 'integration' });
      const poor = await connect(rt.wsUrl, { 'X-API-Key': await key(['contacts:read']), 'X-Tenant-ID': t.tenantId }).then(() => null, (e: { status?: number }) => e);
      expect(poor?.status).to.equal(403);
      const other = await createTenant();
      const foreign = await connect(rt.wsUrl, { 'X-API-Key': await key(['conversations:read']), 'X-Tenant-ID': other.tenantId }).then(() => null, (e: { status?: number }) => e);
      expect(foreign?.status).to.equal(403);
    });

    it('a member of another tenant cannot select this one with X-Tenant-ID', async () => {
      const a = await createTenant();
      const b = await createTenant();
      const err = await connect(rt.wsUrl, { ...bearer(a.owner.accessToken), 'X-Tenant-ID': b.tenantId }).then(() => null, (e: { status?: number }) => e);
      expect(err?.status).to.equal(403);
    });
  });

  describe('events', () => {
    it('conversation.transferred and conversation.reopened arrive with exactly the seed\'s payload fields', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await open(rt.wsUrl, bearer(t.owner.accessToken));
      const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/transfer`).set(bearer(t.owner.accessToken)).send({ user_id: agent.userId }).expect(200);
      const transferred = await c.next(isEvent('conversation.transferred'));
      expect(Object.keys(transferred.data).sort()).to.deep.equal(['assigned_user_id', 'conversation_id', 'department_id']);
      expect(transferred.data).to.deep.equal({ conversation_id: conv.id, assigned_user_id: agent.userId, department_id: null });
      expect(transferred).to.include({ tenant_id: t.tenantId });
      expect(transferred.id).to.match(/^evt_/);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/reopen`).set(bearer(t.owner.accessToken)).expect(200);
      const reopened = await c.next(isEvent('conversation.reopened'));
      expect(reopened.data).to.deep.equal({ conversation_id: conv.id });
    });

    it('every event type of the AsyncAPI file is produced by some action and matches its schema as received', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const agentToken = await login(agent.email);
      const auth = bearer(t.owner.accessToken);
      // A visitor from a real widget session, so that they can answer the survey (csat.submitted).
      const widget = (await request(rt.app).post('/api/v1/widgets').set(auth).send({ name: 'w' }).expect(201)).body;
      await request(rt.app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
      const widgetSession = (
        await request(rt.app).post('/api/v1/widget/sessions').set('Origin', 'https://shop.example').send({ widget_id: widget.id, page_url: 'https://shop.example/' }).expect(201)
      ).body;
      const visitorId = widgetSession.visitor_id as string;
      const owner = await open(rt.wsUrl, bearer(t.owner.accessToken));
      const conv = await createConversation(t, { visitor_id: visitorId, message: 'Hello!' }, t.owner.accessToken, rt.app);
      await request(rt.app).put(`/api/v1/conversations/${conv.id}`).set(auth).send({ priority: 'high' }).expect(200);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/assign`).set(auth).send({ user_id: agent.userId }).expect(200);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/transfer`).set(auth).send({ user_id: t.owner.userId }).expect(200);
      await request(rt.app).post(`/api/v1/messages/${conv.id}/read`).set(auth).expect(200);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/close`).set(auth).expect(200);
      await request(rt.app)
        .post(`/api/v1/widget/conversations/${conv.id}/survey`)
        .set({ Authorization: `Bearer ${widgetSession.visitor_token}`, Origin: 'https://shop.example' })
        .send({ rating: 4 })
        .expect(201);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/reopen`).set(auth).expect(200);
      const agentSocket = await open(rt.wsUrl, bearer(agentToken)); // presence.updated: the agent comes online
      agentSocket.ws.send(JSON.stringify({ type: 'typing', conversation_id: conv.id, is_typing: true }));
      const visitor = await open(`${rt.wsUrl}?visitor_token=${widgetSession.visitor_token}`, { Origin: 'https://shop.example' }); // visitor.online
      visitor.close(); // visitor.offline
      await owner.next(isEvent('visitor.offline'));
      const seen = new Set<string>();
      // Stored events and live signals: everything but control frames.
      for (const frame of owner.frames.filter((f) => f.tenant_id)) {
        expect(contractErrors(frame), `${frame.type}: ${JSON.stringify(frame)}`).to.deep.equal([]);
        seen.add(frame.type);
      }
      expect([...seen].sort()).to.deep.equal([...EVENT_TYPES].sort());
    });

    it('a socket of tenant A never receives an event of tenant B', async () => {
      const a = await createTenant();
      const b = await createTenant();
      const socketA = await open(rt.wsUrl, bearer(a.owner.accessToken));
      const socketB = await open(rt.wsUrl, bearer(b.owner.accessToken));
      const convB = await createConversation(b, { message: 'secret of B' }, b.owner.accessToken, rt.app);
      await socketB.next((f) => f.type === 'message.created');
      const convA = await createConversation(a, {}, a.owner.accessToken, rt.app);
      await socketA.next((f) => f.type === 'conversation.created' && f.data.conversation_id === convA.id);
      await rt.gateway.caughtUp(a.tenantId);
      expect(socketA.frames.filter((f) => f.tenant_id).every((f) => f.tenant_id === a.tenantId)).to.equal(true);
      expect(JSON.stringify(socketA.frames)).not.to.contain(convB.id).and.not.to.contain('secret of B');
    });

    it('visitors get only their own conversations, without internal notes and without names', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const mine = await createVisitor(t);
      const other = await createVisitor(t);
      const visitor = await open(rt.wsUrl, bearer(await visitorToken(t, mine)));
      expect(visitor.frames[0]).to.include({ audience: 'visitor' });
      const conv = await createConversation(t, { visitor_id: mine }, t.owner.accessToken, rt.app);
      const foreign = await createConversation(t, { visitor_id: other, message: 'not for you' }, t.owner.accessToken, rt.app);
      const auth = bearer(t.owner.accessToken);
      await request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'psst internal', internal: true }).expect(201);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/transfer`).set(auth).send({ user_id: agent.userId, note: 'hand-over note' }).expect(200);
      await request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'Hi, I can help' }).expect(201);
      const reply = await visitor.next((f) => f.type === 'message.created' && f.data.message.content === 'Hi, I can help');
      expect(reply.data.message).to.include({ sender_type: 'user', sender_id: null });
      expect(contractErrors(reply)).to.deep.equal([]);
      // Everything written before the reply reached the visitor's socket before it (one stream, in order).
      await rt.gateway.caughtUp(t.tenantId);
      const text = JSON.stringify(visitor.frames);
      expect(text).not.to.contain('psst internal').and.not.to.contain('hand-over note').and.not.to.contain('not for you');
      expect(text).not.to.contain(agent.userId).and.not.to.contain(t.owner.userId).and.not.to.contain(foreign.id);
      const types = visitor.frames.filter((f) => f.id).map((f) => f.type);
      expect(types).not.to.include('conversation.transferred').and.not.to.include('conversation.assigned');
      // The notice of the transfer reaches the visitor as a message, without names.
      expect(visitor.frames.some((f) => f.type === 'message.created' && f.data.message.type === 'system')).to.equal(true);
    });
  });

  describe('resume', () => {
    it('live signals carry no id, so resuming from the last id seen never asks for a resync', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const watcher = await open(rt.wsUrl, auth);
      await createConversation(t, {}, t.owner.accessToken, rt.app);
      await watcher.next(isEvent('conversation.created'));
      const agent = await addMember(t);
      const agentSocket = await open(rt.wsUrl, bearer(await login(agent.email)));
      const signal = await watcher.next((f) => f.type === 'presence.updated' && f.data.user_id === agent.userId);
      expect(signal).not.to.have.property('id');
      agentSocket.close();
      const lastWithId = [...watcher.frames].reverse().find((f) => f.id)!;
      watcher.ws.terminate();
      const resumed = await open(`${rt.wsUrl}?last_event_id=${lastWithId.id}`, auth);
      resumed.ws.send(JSON.stringify({ type: 'ping' }));
      await resumed.next(isEvent('pong'));
      expect(resumed.frames.map((f) => f.type)).not.to.include('resync_required');
    });

    it('a client that reconnects with last_event_id gets every event it missed, in order, none twice', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const first = await open(rt.wsUrl, auth);
      const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
      const created = await first.next(isEvent('conversation.created'));
      first.ws.terminate(); // a forced disconnect
      await request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'while away 1' }).expect(201);
      await request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'while away 2' }).expect(201);
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/close`).set(auth).expect(200);
      const second = await open(`${rt.wsUrl}?last_event_id=${created.id}`, auth);
      const closed = await second.next(isEvent('conversation.closed'));
      await request(rt.app).post(`/api/v1/conversations/${conv.id}/reopen`).set(auth).expect(200);
      await second.next(isEvent('conversation.reopened'));
      // Stored events only: live signals (this socket's own presence.updated) are not in the feed.
      const live = ['presence.updated', 'typing', 'visitor.online', 'visitor.offline'];
      const events = second.frames.filter((f) => f.id && !live.includes(f.type));
      const contents = events.filter((f) => f.type === 'message.created').map((f) => f.data.message.content);
      expect(contents.slice(0, 4)).to.deep.equal(['while away 1', 'while away 2', 'This conversation has been closed.', 'How would you rate this conversation? Answer with a rating from 1 to 5.']);
      expect(events.map((f) => f.id)).to.have.length(new Set(events.map((f) => f.id)).size);
      expect(events.findIndex((f) => f.id === closed.id)).to.be.lessThan(events.findIndex((f) => f.type === 'conversation.reopened'));
      expect(events.some((f) => f.id === created.id)).to.equal(false);
      // The replay matches the feed exactly.
      const feed = await request(rt.app).get('/api/v1/events?limit=100').set(auth).expect(200);
      const feedIds = feed.body.data.map((e: { id: string }) => e.id);
      expect(events.map((f) => f.id)).to.deep.equal(feedIds.slice(feedIds.indexOf(created.id) + 1));
    });

    it('an unknown last_event_id, or one past the 7-day retention, gets resync_required', async () => {
      const t = await createTenant();
      const unknown = await open(`${rt.wsUrl}?last_event_id=${newId('event')}`, bearer(t.owner.accessToken));
      expect(await unknown.next((f) => f.type === 'resync_required')).to.deep.equal({ type: 'resync_required', reason: 'unknown_event' });
      const eightDaysAgo = (Date.now() - 8 * 24 * 3600 * 1000).toString(16).padStart(12, '0');
      const old = `evt_${eightDaysAgo.slice(0, 8)}-${eightDaysAgo.slice(8)}-7000-8000-000000000000`;
      const stale = await open(`${rt.wsUrl}?last_event_id=${old}`, bearer(t.owner.accessToken));
      expect(await stale.next((f) => f.type === 'resync_required')).to.deep.equal({ type: 'resync_required', reason: 'past_retention' });
      // The connection carries on live.
      const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
      await stale.next((f) => f.type === 'conversation.created' && f.data.conversation_id === conv.id);
    });

    it('events whose transactions commit out of order reach the socket in commit-safe order', async function () {
      const { database } = await getHarness();
      if (database.kind !== 'postgres') this.skip(); // PGlite runs one transaction at a time
      const t = await createTenant();
      const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
      const socket = await open(rt.wsUrl, bearer(t.owner.accessToken));
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let wrote!: () => void;
      const written = new Promise<void>((r) => (wrote = r));
      const slow = database.withTenant(t.tenantId, async (trx) => {
        await writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: conv.id }, { conversationId: conv.id });
        wrote();
        await gate;
      }, { eventWriter: true });
      await written;
      await database.withTenant(t.tenantId, (trx) =>
        writeEvent(trx, t.tenantId, 'conversation.assigned', { conversation_id: conv.id, assigned_user_id: null, previous_assigned_user_id: null }),
      { eventWriter: true });
      const stored = () => socket.frames.filter((f) => f.id && f.type !== 'presence.updated').map((f) => f.type);
      try {
        await request(rt.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'nudge' }).expect(201);
        // The stream has read since the nudge committed, and held everything back.
        await rt.gateway.caughtUp(t.tenantId);
        expect(stored()).to.deep.equal([]);
      } finally {
        // An open transaction holds back every reader of the outbox: never leave it open.
        release();
        await slow;
      }
      await socket.next((f) => f.type === 'message.created');
      expect(stored()).to.deep.equal(['conversation.reopened', 'conversation.assigned', 'message.created']);
    });

    describe('handed over by their writer', () => {
      const STORED = (f: Record<string, any>) => f.id && !['presence.updated', 'typing', 'visitor.online', 'visitor.offline'].includes(f.type);
      /** An event committed without telling anyone: a writer that hands nothing over (or whose handoff was lost). */
      const silentEvent = async (t: TestTenant, conversationId: string) => {
        const { database } = await getHarness();
        return database.withTenant(t.tenantId, (trx) => writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: conversationId }, { conversationId }), {
          eventWriter: true,
        });
      };

      it('a send reaches the sockets without a read of the feed', async () => {
        const { database } = await getHarness();
        let streamTransactions = 0;
        const counted = { ...database, withTenant: ((...args) => (streamTransactions++, database.withTenant(...args))) as typeof database.withTenant };
        const own = await startRealtime({ streamDatabase: counted });
        try {
          const t = await createTenant();
          const auth = bearer(t.owner.accessToken);
          const socket = await connect(own.wsUrl, auth);
          clients.push(socket);
          const conv = await createConversation(t, {}, t.owner.accessToken, own.app);
          await socket.next((f) => f.type === 'conversation.created' && f.data.conversation_id === conv.id);
          const before = streamTransactions;
          for (const content of ['one', 'two', 'three']) {
            await request(own.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content }).expect(201);
            await socket.next((f) => f.type === 'message.created' && f.data.message.content === content);
          }
          expect(streamTransactions - before, 'transactions the stream opened for three sends').to.equal(0);
        } finally {
          await own.close();
        }
      });

      it('a transaction whose failed statement was caught is an error, and hands nothing over', async () => {
        const { database } = await getHarness();
        const t = await createTenant();
        const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
        const bus = new EventBus();
        const heard: unknown[] = [];
        bus.subscribe((events, handoff) => heard.push({ events, handoff }), { wantsHandoff: () => true });
        let failure: unknown;
        try {
          await inTenantTransaction(database, bus, t.tenantId, async (trx, emit) => {
            await emit('conversation.reopened', { conversation_id: conv.id }, { conversationId: conv.id });
            await sql`select 1 / 0`.execute(trx).catch(() => undefined); // caught: the transaction is aborted
            return 'done';
          });
        } catch (err) {
          failure = err;
        }
        expect(failure, 'the transaction ends in an error').to.be.instanceOf(Error);
        expect(heard).to.deep.equal([]);
        const feed = await request(rt.app).get('/api/v1/events?limit=100').set(bearer(t.owner.accessToken)).expect(200);
        expect(feed.body.data.map((e: { type: string }) => e.type)).not.to.include('conversation.reopened');
      });

      it('a writer that begins beside another of its tenant on this instance finds out nothing on PostgreSQL (the streams read), and hands over on PGlite', async () => {
        const { database } = await getHarness();
        const t = await createTenant();
        const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
        const bus = new EventBus();
        const heard: { first: boolean; handedOver: boolean }[] = [];
        bus.subscribe((events, handoff) => heard.push({ first: (events[0]!.envelope.data as { conversation_id?: string }).conversation_id === 'first', handedOver: handoff !== undefined }), {
          wantsHandoff: () => true,
        });
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const emitOne = (label: string, wait?: Promise<void>) =>
          inTenantTransaction(database, bus, t.tenantId, async (_trx, emit) => {
            // Before its event: a writer with no transaction id yet, which would not keep the second's place from being final.
            await wait;
            await emit('conversation.reopened', { conversation_id: label }, { conversationId: conv.id });
          });
        const first = emitOne('first', gate);
        const second = emitOne('second');
        // The second began while the first ran; on PGlite it waits for it (one connection).
        if (database.kind === 'postgres') await second;
        release();
        await Promise.all([first, second]);
        const pglite = database.kind === 'pglite';
        expect(heard.map((h) => h.first).sort()).to.deep.equal([false, true]);
        expect(heard.find((h) => h.first)!.handedOver, 'the first').to.equal(true);
        expect(heard.find((h) => !h.first)!.handedOver, 'the second').to.equal(pglite);
        // Both ended: the next writer alone finds out again.
        await emitOne('third');
        expect(heard.at(-1)!.handedOver).to.equal(true);
      });

      it('an event nobody handed over is read from the feed before what follows it', async () => {
        const t = await createTenant();
        const auth = bearer(t.owner.accessToken);
        const socket = await open(rt.wsUrl, auth);
        const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
        await socket.next((f) => f.type === 'conversation.created');
        const silent = await silentEvent(t, conv.id);
        await request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'after the silent one' }).expect(201);
        await socket.next((f) => f.type === 'message.created');
        const stored = socket.frames.filter(STORED);
        expect(stored.map((f) => f.type)).to.deep.equal(['conversation.created', 'conversation.reopened', 'message.created']);
        expect(stored[1]!.id).to.equal(silent.envelope.id);
      });

      it('any mix of concurrent sends and events nobody handed over reaches a socket as the feed holds it', async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(fc.constantFrom('send', 'silent', 'close'), { minLength: 1, maxLength: 10 }), fc.boolean(), async (ops, lateJoin) => {
            const t = await createTenant();
            const auth = bearer(t.owner.accessToken);
            const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
            const early = lateJoin ? undefined : await open(rt.wsUrl, auth);
            const joinedAfter = (await request(rt.app).get('/api/v1/events?limit=100').set(auth).expect(200)).body.data.map((e: { id: string }) => e.id);
            // With lateJoin the tenant's first socket joins while the writes run: its stream starts among them.
            const late = lateJoin ? open(rt.wsUrl, auth) : undefined;
            await Promise.all([
              late,
              ...ops.map((op, i) =>
                op === 'silent'
                  ? silentEvent(t, conv.id)
                  : op === 'send'
                    ? // A send after the close is refused (409), and writes nothing.
                      request(rt.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: `m${i}` })
                    : request(rt.app).post(`/api/v1/conversations/${conv.id}/close`).set(auth),
              ),
            ]);
            const socket = early ?? (await late)!;
            // The sentinel: once it is in, everything committed before it is too.
            const sentinel = await createConversation(t, {}, t.owner.accessToken, rt.app);
            await socket.next((f) => f.type === 'conversation.created' && f.data.conversation_id === sentinel.id);
            const feed: string[] = (await request(rt.app).get('/api/v1/events?limit=100').set(auth).expect(200)).body.data.map((e: { id: string }) => e.id);
            const received = socket.frames.filter(STORED).map((f) => f.id);
            if (early) expect(received).to.deep.equal(feed.filter((id) => !joinedAfter.includes(id)));
            // A late socket starts wherever the feed stood when it joined, and from there misses and repeats nothing.
            else expect(received).to.deep.equal(feed.slice(feed.indexOf(received[0]!)));
            socket.ws.terminate();
          }),
          { numRuns: 16 },
        );
      });
    });
  });

  describe('presence and typing', () => {
    it('online while connected, away when set, offline when gone; presence.updated to the team', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const watcher = await open(rt.wsUrl, bearer(t.owner.accessToken));
      const presenceOf = async () =>
        (await request(rt.app).get('/api/v1/team/members?include=presence').set(bearer(t.owner.accessToken)).expect(200)).body.data.find(
          (m: { user_id: string }) => m.user_id === agent.userId,
        ).presence;
      expect(await presenceOf()).to.equal('offline');
      const agentSocket = await connect(rt.wsUrl, bearer(await login(agent.email)));
      await watcher.next((f) => f.type === 'presence.updated' && f.data.presence === 'online');
      expect(await presenceOf()).to.equal('online');
      agentSocket.ws.send(JSON.stringify({ type: 'presence', status: 'away' }));
      await watcher.next((f) => f.type === 'presence.updated' && f.data.presence === 'away');
      expect(await presenceOf()).to.equal('away');
      agentSocket.close();
      await watcher.next((f) => f.type === 'presence.updated' && f.data.presence === 'offline');
      expect(await presenceOf()).to.equal('offline');
    });

    it('the department pick of a transfer prefers the member who is online', async () => {
      const t = await createTenant();
      const offline = await addMember(t);
      const online = await addMember(t);
      const dept = await request(rt.app).post('/api/v1/departments').set(bearer(t.owner.accessToken)).send({ name: 'Live', member_ids: [offline.userId, online.userId] }).expect(201);
      await open(rt.wsUrl, bearer(await login(online.email)));
      for (let i = 0; i < 2; i++) {
        const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
        const res = await request(rt.app).post(`/api/v1/conversations/${conv.id}/transfer`).set(bearer(t.owner.accessToken)).send({ department_id: dept.body.id }).expect(200);
        expect(res.body.conversation.assigned_user_id).to.equal(online.userId);
      }
    });

    it('typing is relayed, not stored: members see who, the visitor does not', async () => {
      const t = await createTenant();
      const visitorId = await createVisitor(t);
      const conv = await createConversation(t, { visitor_id: visitorId }, t.owner.accessToken, rt.app);
      const agent = await addMember(t);
      const typist = await open(rt.wsUrl, bearer(t.owner.accessToken));
      const colleague = await open(rt.wsUrl, bearer(await login(agent.email)));
      const visitor = await open(rt.wsUrl, bearer(await visitorToken(t, visitorId)));
      typist.ws.send(JSON.stringify({ type: 'typing', conversation_id: conv.id, is_typing: true }));
      const seenByColleague = await colleague.next(isEvent('typing'));
      expect(seenByColleague.data).to.deep.equal({ conversation_id: conv.id, sender_type: 'user', sender_id: t.owner.userId, is_typing: true });
      const seenByVisitor = await visitor.next(isEvent('typing'));
      expect(seenByVisitor.data).to.deep.equal({ conversation_id: conv.id, sender_type: 'user', is_typing: true });
      // The signal went to every socket at once; a pong after it on the typist's socket comes after anything sent to it.
      const before = typist.frames.length;
      typist.ws.send(JSON.stringify({ type: 'ping' }));
      await typist.next(isEvent('pong'), before);
      expect(typist.frames.some((f) => f.type === 'typing')).to.equal(false);
      const feed = await request(rt.app).get('/api/v1/events?limit=100').set(bearer(t.owner.accessToken)).expect(200);
      expect(feed.body.data.some((e: { type: string }) => e.type === 'typing')).to.equal(false);
      // A visitor typing into someone else's conversation is told it does not exist.
      const otherConv = await createConversation(t, {}, t.owner.accessToken, rt.app);
      visitor.ws.send(JSON.stringify({ type: 'typing', conversation_id: otherConv.id, is_typing: true }));
      expect(await visitor.next((f) => f.type === 'error')).to.include({ code: 'ERR_NOT_FOUND' });
    });
  });

  describe('limits and credentials', () => {
    it('frames over 64 KiB close with 1009; frames that are not JSON with 1008', async () => {
      const t = await createTenant();
      const big = await open(rt.wsUrl, bearer(t.owner.accessToken));
      big.ws.send(JSON.stringify({ type: 'ping', pad: 'x'.repeat(65 * 1024) }));
      expect((await big.closed).code).to.equal(CLOSE.tooBig);
      const garbage = await open(rt.wsUrl, bearer(t.owner.accessToken));
      garbage.ws.send('not json');
      expect((await garbage.closed).code).to.equal(CLOSE.protocol);
      const pinger = await open(rt.wsUrl, bearer(t.owner.accessToken));
      pinger.ws.send(JSON.stringify({ type: 'ping' }));
      expect(await pinger.next((f) => f.type === 'pong')).to.deep.equal({ type: 'pong' });
    });

    it('an access token that expires closes its socket with 4001', async () => {
      const t = await createTenant();
      const sessionId = (jwt.decode(t.owner.accessToken) as jwt.JwtPayload).sid as string;
      // Issued 897 s ago: two to three seconds left (iat is rounded down to the second), time to connect.
      const token = new TokenService(TEST_JWT_SECRET, () => Date.now() - 897_000).signAccessToken({ userId: t.owner.userId, tenantId: t.tenantId, sessionId });
      const c = await open(rt.wsUrl, bearer(token));
      expect((await c.closed).code).to.equal(CLOSE.credentials);
    });

    it('a login ended by logout closes its sockets with 4001', async () => {
      const t = await createTenant();
      const c = await open(rt.wsUrl, bearer(t.owner.accessToken));
      await request(rt.app).post('/api/v1/auth/logout').send({ refresh_token: t.owner.refreshToken }).expect(200);
      // At once: no heartbeat is needed (the logout tells every instance).
      expect((await c.closed).code).to.equal(CLOSE.credentials);
    });

    it('a member removed from the team loses their sockets at once, and their cached login with them', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const token = await login(agent.email);
      await request(rt.app).get(`/api/v1/tenants/${t.tenantId}`).set(bearer(token)).expect(200); // now cached
      const c = await open(rt.wsUrl, bearer(token));
      await request(rt.app).delete(`/api/v1/tenants/${t.tenantId}/members/${agent.userId}`).set(bearer(t.owner.accessToken)).expect(200);
      expect((await c.closed).code).to.equal(CLOSE.credentials);
      await request(rt.app).get(`/api/v1/tenants/${t.tenantId}`).set(bearer(token)).expect(401);
    });
    it('a revoked API key closes its sockets at once, and a rotation closes those of its old value', async () => {
      const t = await createTenant();
      const createKey = async () =>
        (await request(rt.app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'ws', scopes: ['conversations:read'] }).expect(201))
          .body as { id: string; key: string };
      const revoked = await createKey();
      const c = await open(rt.wsUrl, { 'X-API-Key': revoked.key, 'X-Tenant-ID': t.tenantId });
      await request(rt.app).delete(`/api/v1/api-keys/${revoked.id}`).set(bearer(t.owner.accessToken)).expect(200);
      expect((await c.closed).code).to.equal(CLOSE.credentials);

      const rotated = await createKey();
      const old = await open(rt.wsUrl, { 'X-API-Key': rotated.key, 'X-Tenant-ID': t.tenantId });
      const res = await request(rt.app).post(`/api/v1/api-keys/${rotated.id}/rotate`).set(bearer(t.owner.accessToken)).expect(200);
      expect((await old.closed).code).to.equal(CLOSE.credentials);
      const renewed = await open(rt.wsUrl, { 'X-API-Key': res.body.key, 'X-Tenant-ID': t.tenantId });
      expect(renewed.frames[0]).to.include({ audience: 'integration' });
    });
  });

  describe('upkeep', () => {
    let tight: RealtimeServer;
    before(async () => {
      tight = await startRealtime({ gateway: { heartbeatMs: 100, maxBufferedBytes: 4096 } });
    });
    after(async () => {
      await tight.close();
    });

    it('a socket that does not answer pings is dropped', async () => {
      const t = await createTenant();
      const deaf = await open(tight.wsUrl, bearer(t.owner.accessToken), { autoPong: false });
      const healthy = await open(tight.wsUrl, bearer(t.owner.accessToken));
      let pings = 0;
      const threeMorePings = new Promise<void>((resolve) => healthy.ws.on('ping', () => ++pings === 3 && resolve()));
      expect((await deaf.closed).code).to.equal(1006);
      // Three more heartbeats, each of which would have dropped a socket that did not answer.
      await threeMorePings;
      expect(healthy.ws.readyState).to.equal(healthy.ws.OPEN);
    });

    it('a key revoked without a notice (one lost between instances) closes its sockets at the next heartbeat', async () => {
      const { deps } = await getHarness();
      const t = await createTenant();
      const createKey = async () =>
        (await request(tight.app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'ws', scopes: ['conversations:read'] }).expect(201))
          .body as { id: string; key: string };
      const [revoked, live] = [await createKey(), await createKey()];
      const gone = await open(tight.wsUrl, { 'X-API-Key': revoked.key, 'X-Tenant-ID': t.tenantId });
      const kept = await open(tight.wsUrl, { 'X-API-Key': live.key, 'X-Tenant-ID': t.tenantId });
      await deps.database.asSystem((trx) => trx.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', revoked.id).execute());
      expect((await gone.closed).code).to.equal(CLOSE.credentials);
      let pings = 0;
      await new Promise<void>((resolve) => kept.ws.on('ping', () => ++pings === 3 && resolve()));
      expect(kept.ws.readyState).to.equal(kept.ws.OPEN);
    });

    it('a consumer that lets too much queue up is closed with 4008', async () => {
      const t = await createTenant();
      const slow = await open(tight.wsUrl, bearer(t.owner.accessToken));
      (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const before = tight.gateway.connectionCount;
      const conv = await createConversation(t, {}, t.owner.accessToken, tight.app);
      // Enough to overflow the kernel's socket buffers too, so the server's own queue grows.
      for (let i = 0; i < 80; i++) {
        await request(tight.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'x'.repeat(5000) }).expect(201);
      }
      // The server closes it (4008) and, since it reads nothing, terminates it: wait for the count to drop.
      await eventually(() => tight.gateway.connectionCount < before, 'the slow socket to be dropped', { timeoutMs: 5000, everyMs: 0 });
    });
  });
});

describe('realtime gateway: sockets of a tenant joining and leaving at once', function () {
  this.timeout(30_000);
  let srv: RealtimeServer;
  /** While set, the streams' next transaction (a join's read of the feed's head) waits for it, or fails. */
  let held: { asked: () => void; answer: Promise<void> } | undefined;

  before(async () => {
    const { database } = await getHarness();
    const withTenant = (async (...args: Parameters<typeof database.withTenant>) => {
      const hold = held;
      held = undefined;
      if (hold) {
        hold.asked();
        await hold.answer;
      }
      return database.withTenant(...args);
    }) as typeof database.withTenant;
    srv = await startRealtime({ streamDatabase: { ...database, withTenant } as typeof database });
  });
  after(async () => {
    await srv.close();
  });

  /** Holds the next join at the feed's head: resolves `asked` once it waits there. */
  function holdNextJoin() {
    let release!: () => void;
    let fail!: (err: Error) => void;
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    held = { asked, answer: new Promise<void>((resolve, reject) => ((release = resolve), (fail = reject))) };
    return { wasAsked, release, fail };
  }

  const connections = (n: number) => eventually(async () => srv.gateway.connectionCount === n, `${n} connections`);

  for (const outcome of ['joins', 'fails to join'] as const) {
    it(`a socket closed while it waits to join leaves no stream behind when the join ${outcome === 'joins' ? 'ends' : 'fails'}`, async () => {
      const t = await createTenant();
      const hold = holdNextJoin();
      const ws = new WebSocket(srv.wsUrl, { headers: bearer(t.owner.accessToken) });
      await Promise.all([hold.wasAsked, new Promise((resolve) => ws.once('open', resolve))]);
      expect(srv.bus.wantsHandoff(t.tenantId), 'a stream for the joining socket').to.equal(true);
      ws.terminate();
      await connections(0);
      if (outcome === 'joins') hold.release();
      else hold.fail(new Error('the database is away'));
      await eventually(async () => !srv.bus.wantsHandoff(t.tenantId), 'the stream dropped');
    });
  }

  it('a socket that joins while another of the tenant closes keeps its stream, and gets what follows', async () => {
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const conv = await createConversation(t, {}, t.owner.accessToken, srv.app);
    const hold = holdNextJoin();
    const leaving = new WebSocket(srv.wsUrl, { headers: auth });
    await Promise.all([hold.wasAsked, new Promise((resolve) => leaving.once('open', resolve))]);
    // A second socket waits on the same read of the head.
    const staying = connect(srv.wsUrl, auth);
    await connections(2);
    leaving.terminate();
    await connections(1);
    hold.release();
    const socket = await staying;
    try {
      const sent = await request(srv.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'after the other left' }).expect(201);
      await socket.next((f) => f.type === 'message.created' && f.data.message.id === sent.body.id);
    } finally {
      socket.ws.terminate();
    }
  });
});

describe('realtime across instances (Redis)', function () {
  this.timeout(30_000);
  const redisUrl = process.env.REDIS_URL;
  let one: RealtimeServer;
  let two: RealtimeServer;

  before(async function () {
    if (!redisUrl) this.skip();
    one = await startRealtime({ redisUrl });
    two = await startRealtime({ redisUrl });
  });
  after(async () => {
    await one?.close();
    await two?.close();
  });

  it('a transfer on one instance reaches a socket on the other; tickets and presence are shared', async () => {
    const t = await createTenant();
    const agent = await addMember(t);
    const ticket = (await request(one.app).post('/api/v1/ws/tickets').set(bearer(t.owner.accessToken)).expect(201)).body.ticket;
    const socket = await connect(`${two.wsUrl}?ticket=${ticket}`);
    try {
      const agentSocket = await connect(two.wsUrl, bearer(await login(agent.email)));
      const team = await request(one.app).get('/api/v1/team/members?include=presence').set(bearer(t.owner.accessToken)).expect(200);
      expect(team.body.data.find((m: { user_id: string }) => m.user_id === agent.userId).presence).to.equal('online');
      const conv = await createConversation(t, {}, t.owner.accessToken, one.app);
      await request(one.app).post(`/api/v1/conversations/${conv.id}/transfer`).set(bearer(t.owner.accessToken)).send({ user_id: agent.userId }).expect(200);
      const transferred = await socket.next((f) => f.type === 'conversation.transferred');
      expect(transferred.data).to.deep.equal({ conversation_id: conv.id, assigned_user_id: agent.userId, department_id: null });
      agentSocket.ws.terminate();
    } finally {
      socket.ws.terminate();
    }
  });
  it("a send's own instance delivers it without a read of the feed, and tells the other, which reads", async () => {
    const { database } = await getHarness();
    const counts = { mine: 0, other: 0 };
    const counting = (key: keyof typeof counts) =>
      ({ ...database, withTenant: ((...args) => (counts[key]++, database.withTenant(...args))) as typeof database.withTenant }) as typeof database;
    const mine = await startRealtime({ redisUrl, streamDatabase: counting('mine') });
    const other = await startRealtime({ redisUrl, streamDatabase: counting('other') });
    try {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const here = await connect(mine.wsUrl, auth);
      const there = await connect(other.wsUrl, auth);
      try {
        const conv = await createConversation(t, {}, t.owner.accessToken, mine.app);
        await Promise.all([here, there].map((s) => s.next((f) => f.type === 'conversation.created' && f.data.conversation_id === conv.id)));
        const before = { ...counts };
        await request(mine.app).post('/api/v1/messages').set(auth).send({ conversation_id: conv.id, content: 'to both' }).expect(201);
        await Promise.all([here, there].map((s) => s.next((f) => f.type === 'message.created' && f.data.message.content === 'to both')));
        expect(counts.mine - before.mine, "reads by the writer's instance").to.equal(0);
        expect(counts.other - before.other, 'reads by the other instance').to.be.at.least(1);
      } finally {
        here.ws.terminate();
        there.ws.terminate();
      }
    } finally {
      await mine.close();
      await other.close();
    }
  });

  it('an instance hears what it publishes at once, and not again from Redis', async () => {
    const clients = await Promise.all([0, 1].map(() => openRedis(redisUrl!, { timeoutMs: 5_000, onError: () => undefined })));
    const [a, b] = await Promise.all(clients.map((c) => RedisFanout.create(c, { pollMs: 250 })));
    const heard = { a: [] as string[], b: [] as string[] };
    const waiters: (() => void)[] = [];
    const until = (check: () => boolean) => eventually(check, () => `what was published to be heard (a: ${heard.a.join(', ')}; b: ${heard.b.join(', ')})`, { wake: (wakeUp) => waiters.push(wakeUp) });
    // Other instances of this run publish on the same channel: only this test's names are kept.
    const tag = newId('tenant');
    const hear = (name: 'a' | 'b', what: string) => {
      if (what.endsWith(tag)) heard[name].push(what.slice(0, -tag.length - 1));
      for (const w of waiters.splice(0)) w();
    };
    await Promise.all(
      ([['a', a!], ['b', b!]] as const).map(([name, fanout]) =>
        fanout.subscribe({ onNotify: (tenantId) => hear(name, `notify ${tenantId}`), onLive: (signal) => hear(name, `live ${signal.tenantId}`) }),
      ),
    );
    try {
      a!.notify([`t1 ${tag}`]);
      a!.live({ tenantId: `t2 ${tag}`, envelope: { type: 'typing', tenant_id: `t2 ${tag}`, created_at: '' }, toMembers: true, data: {} } as never);
      await Promise.resolve();
      expect(heard.a, 'heard by a before any round trip to Redis').to.deep.equal(['notify t1', 'live t2']);
      await until(() => heard.b.includes('live t2'));
      // Redis keeps one channel's order: once a hears b's sentinel, any echo of its own would be in.
      b!.notify([`sentinel ${tag}`]);
      await until(() => heard.a.includes('notify sentinel'));
      expect(heard.a).to.deep.equal(['notify t1', 'live t2', 'notify sentinel']);
      expect(heard.b).to.deep.equal(['notify t1', 'live t2', 'notify sentinel']);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
      for (const c of clients) c.close();
    }
  });
});
