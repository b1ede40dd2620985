import { expect } from 'chai';
import fc from 'fast-check';
import { createConversation, createTenant, createVisitor, type TestTenant } from '../support/factories.ts';
import { MAX_FRAMES_WAITING } from '../../src/realtime/gateway.ts';
import { newId } from '../../src/shared/ids.ts';
import { MemoryPresenceTracker, type PresenceTracker } from '../../src/realtime/presence-tracker.ts';
import { getHarness } from '../support/harness.ts';
import { type Client, connect, type RealtimeServer, startRealtime } from '../support/realtime.ts';

// What a client may send on its socket, whatever it is: a frame the gateway understands is answered, a
// frame it does not closes the socket with 1008 or 1003, and a wrong value in a known frame is an error
// frame naming the client's mistake. Never ERR_UNAVAILABLE (that says the service failed, and the
// database is up here), and never a silence that leaves the socket unusable: a ping after the frames is
// answered on a socket that stayed open.

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
/** Close codes a frame may earn: 1003 (binary), 1008 (not JSON, or unknown), 1009 (too large). */
const CLIENT_CLOSES = [1003, 1008, 1009];
const CLIENT_ERRORS = ['ERR_NOT_FOUND', 'ERR_VALIDATION'];

const ODD_TEXT = ['', ' ', '\u0000', '\ud800', 'é', '😀', "'; select 1; --", 'conv_', '%00', 'null', 'x'.repeat(1000)];

function frames(conversationIds: string[]): fc.Arbitrary<{ text?: string; binary?: Buffer }> {
  const conversationId = fc.oneof(
    fc.constantFrom(...conversationIds),
    fc.constantFrom(...ODD_TEXT),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.jsonValue({ maxDepth: 1 }),
  );
  const known = fc.oneof(
    fc.record({ type: fc.constant('ping') }),
    fc.record({ type: fc.constant('presence'), status: fc.oneof(fc.constantFrom('online', 'away', 'offline', 'ONLINE', ''), fc.jsonValue({ maxDepth: 1 })) }),
    fc.record(
      { type: fc.constant('typing'), conversation_id: conversationId, is_typing: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })) },
      { requiredKeys: ['type'] },
    ),
  );
  const odd = fc.oneof(
    fc.record({ type: fc.oneof(fc.constantFrom('subscribe', '__proto__', 'constructor', 'toString', 'PING', 'welcome', 'pong'), fc.jsonValue({ maxDepth: 1 })) }),
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(null, [], 0, 'ping', true),
  );
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(known, fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 })).map(([f, extra]) => ({ text: JSON.stringify({ ...extra, ...f }) })) },
    { weight: 2, arbitrary: odd.map((value) => ({ text: JSON.stringify(value) })) },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"type":', '\ufeff{"type":"ping"}', 'ping', '\u0000', '[').map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 20 }).map((bytes) => ({ binary: Buffer.from(bytes) })) },
  );
}

describe('realtime: whatever a client sends on its socket', function () {
  this.timeout(120_000);
  let rt: RealtimeServer;
  let t: TestTenant;
  let other: TestTenant;
  let visitorToken: string;
  let conversationIds: string[];

  before(async () => {
    rt = await startRealtime();
    t = await createTenant();
    other = await createTenant();
    const visitorId = await createVisitor(t);
    const h = await getHarness();
    visitorToken = h.deps.tokens.signVisitorToken({ visitorId, tenantId: t.tenantId });
    conversationIds = [
      (await createConversation(t, { visitor_id: visitorId }, t.owner.accessToken, rt.app)).id,
      (await createConversation(t, {}, t.owner.accessToken, rt.app)).id,
      (await createConversation(other, {}, other.owner.accessToken, rt.app)).id,
    ];
  });

  after(() => rt?.close());

  // It can fail only on PostgreSQL, where two lookups run at once; the embedded database runs one at a time.
  it('typing frames are relayed in the order they were sent', async () => {
    const typist = await connect(rt.wsUrl, bearer(t.owner.accessToken));
    const watcher = await connect(rt.wsUrl, bearer(visitorToken));
    try {
      // Lookups that could finish in any order: the first frame's conversation, then the other's, many times.
      const sent: boolean[] = [];
      for (let i = 0; i < 20; i++) {
        sent.push(i % 2 === 0);
        typist.ws.send(JSON.stringify({ type: 'typing', conversation_id: conversationIds[0], is_typing: i % 2 === 0 }));
      }
      const before = typist.frames.length;
      typist.ws.send(JSON.stringify({ type: 'ping' }));
      await typist.next((f) => f.type === 'pong', before);
      await watcher.next((f) => f.type === 'typing' && watcher.frames.filter((g) => g.type === 'typing').length === sent.length);
      expect(watcher.frames.filter((f) => f.type === 'typing').map((f) => f.data.is_typing)).to.deep.equal(sent);
    } finally {
      typist.close();
      watcher.close();
    }
  });

  it('a presence update that hangs (Redis away) holds up none of the frames after it', async () => {
    const tracker = new MemoryPresenceTracker();
    let hung = 0;
    const hanging: PresenceTracker = {
      set: (tenantId, subject, connectionId, status) => {
        if (status === 'online') return tracker.set(tenantId, subject, connectionId, status);
        hung++;
        return new Promise<never>(() => undefined);
      },
      remove: (tenantId, subject, connectionId) => tracker.remove(tenantId, subject, connectionId),
      refresh: () => tracker.refresh(),
      presenceOf: (tenantId, userIds) => tracker.presenceOf(tenantId, userIds),
    };
    const own = await startRealtime({ presence: hanging });
    const member = await connect(own.wsUrl, bearer(t.owner.accessToken));
    try {
      member.ws.send(JSON.stringify({ type: 'presence', status: 'away' }));
      const before = member.frames.length;
      member.ws.send(JSON.stringify({ type: 'ping' }));
      await member.next((f) => f.type === 'pong', before);
      expect(hung, 'the presence frame never reached the tracker').to.equal(1);
    } finally {
      member.close();
      await own.close();
    }
  });

  it(`a client that sends more than ${MAX_FRAMES_WAITING} frames before they are handled is closed with 1008`, async () => {
    const flood = await connect(rt.wsUrl, bearer(t.owner.accessToken));
    // Each needs a lookup, so none is handled before the rest have come in.
    const frame = JSON.stringify({ type: 'typing', conversation_id: newId('conversation'), is_typing: true });
    for (let i = 0; i < MAX_FRAMES_WAITING * 4; i++) flood.ws.send(frame);
    expect(await flood.closed).to.deep.equal({ code: 1008, reason: 'too many frames at once' });
  });

  for (const who of ['member', 'visitor'] as const) {
    it(`a ${who}'s socket answers, refuses or closes: never a failure of the service`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(frames(conversationIds), { minLength: 1, maxLength: 6 }), async (sent) => {
          const client: Client = await connect(rt.wsUrl, bearer(who === 'member' ? t.owner.accessToken : visitorToken));
          try {
            // All sent at once; what follows a frame that closes the socket is dropped by the server.
            for (const frame of sent) {
              if (frame.binary) client.ws.send(frame.binary, { binary: true });
              else client.ws.send(frame.text!);
            }
            // The sentinel: a ping after everything, answered in order, or the close that ended the socket.
            const before = client.frames.length;
            client.ws.send(JSON.stringify({ type: 'ping', sentinel: true }));
            const ended = await Promise.race([client.next((f) => f.type === 'pong', before).then(() => undefined), client.closed]);
            const what = `${JSON.stringify(sent)} → ${JSON.stringify(client.frames.slice(1))} ${JSON.stringify(ended)}`;
            if (ended) expect(ended.code, what).to.be.oneOf(CLIENT_CLOSES);
            for (const f of client.frames.filter((f) => f.type === 'error')) expect(f.code, what).to.be.oneOf(CLIENT_ERRORS);
          } finally {
            client.close();
          }
        }),
        { numRuns: Number(process.env.FUZZ_RUNS ?? 40) },
      );
    });
  }
});
