import { expect } from 'chai';
import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import request from 'supertest';
import { FEED_START, type FeedPosition, readFeed } from '../../src/events/feed.repository.ts';
import { writeEvent } from '../../src/events/outbox.ts';
import { createConversation, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { type Client, connect, startRealtime, type RealtimeServer } from '../support/realtime.ts';
import { recordFigure } from './figures.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Every event of the tenant in feed order, read once nothing is running. */
async function wholeFeed(tenantId: string): Promise<string[]> {
  const { database } = await getHarness();
  const ids: string[] = [];
  let after: FeedPosition = FEED_START;
  for (;;) {
    const { rows } = await database.withTenant(tenantId, (trx) => readFeed(trx, { tenantId, after, limit: 500 }));
    if (rows.length === 0) return ids;
    ids.push(...rows.map((r) => r.id));
    after = rows[rows.length - 1]!;
  }
}

/** Waits until the socket has a frame with this id, then for a ping sent after it to be answered. */
async function drained(socket: Client, lastId: string): Promise<void> {
  await socket.next((f) => f.id === lastId);
  const from = socket.frames.length;
  socket.ws.send(JSON.stringify({ type: 'ping' }));
  await socket.next((f) => f.type === 'pong', from);
}

describe('the event feed under concurrency and faults', function () {
  this.timeout(300_000);
  let rt: RealtimeServer;

  before(async function () {
    const { database } = await getHarness();
    // PGlite runs one transaction at a time: nothing can interleave, so these need PostgreSQL.
    if (database.kind !== 'postgres') {
      console.log('      (skipped: the feed fault tests need DATABASE_URL, PostgreSQL)');
      this.skip();
    }
    rt = await startRealtime();
  });

  after(async () => {
    await rt?.close();
  });

  it('property: concurrent writers committing in any order, rolling back, readers paging at any point: every reader sees exactly the committed events, in order, once', async () => {
    const { database } = await getHarness();
    type Action = { kind: 'open'; writer: number } | { kind: 'end'; writer: number } | { kind: 'read'; reader: number; limit: number };
    let runs = 0;
    let eventsChecked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ events: fc.integer({ min: 1, max: 3 }), rollback: fc.integer({ min: 0, max: 4 }).map((x) => x === 0) }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 4 })), { minLength: 2, maxLength: 12 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 30, maxLength: 30 }),
        async (writers, reads, keys) => {
          runs++;
          const t = await createTenant();
          const conv = await createConversation(t);
          // A socket following the tenant live, from before the first write.
          const live = await connect(rt.wsUrl, bearer(t.owner.accessToken));
          // Each writer opens (writes its events, then waits) and later ends (commits or rolls back), in an
          // order drawn from the keys; reads fall anywhere in between.
          const actions: { key: number; action: Action }[] = [];
          writers.forEach((_, i) => {
            const [a, b] = [keys[(2 * i) % 30]!, keys[(2 * i + 1) % 30]!];
            actions.push({ key: Math.min(a, b), action: { kind: 'open', writer: i } }, { key: Math.max(a, b) + 1e-9, action: { kind: 'end', writer: i } });
          });
          reads.forEach(([reader, limit], j) => actions.push({ key: keys[(j + 17) % 30]!, action: { kind: 'read', reader, limit } }));
          actions.sort((x, y) => x.key - y.key);

          const gates = writers.map(() => {
            let open!: (commit: boolean) => void;
            const gate = new Promise<boolean>((r) => (open = r));
            return { gate, open, done: Promise.resolve() as Promise<unknown>, ids: [] as string[] };
          });
          const readers = [0, 1, 2].map(() => ({ after: FEED_START, seen: [] as string[] }));
          const readOnce = async (reader: (typeof readers)[number], limit: number) => {
            const { rows } = await database.withTenant(t.tenantId, (trx) => readFeed(trx, { tenantId: t.tenantId, after: reader.after, limit }));
            reader.seen.push(...rows.map((r) => r.id));
            if (rows.length > 0) reader.after = rows[rows.length - 1]!;
          };
          try {
            for (const { action } of actions) {
              if (action.kind === 'open') {
                const w = gates[action.writer]!;
                let written!: () => void;
                const ready = new Promise<void>((r) => (written = r));
                w.done = database
                  .withTenant(
                    t.tenantId,
                    async (trx) => {
                      for (let k = 0; k < writers[action.writer]!.events; k++) {
                        const stored = await writeEvent(trx, t.tenantId, 'conversation.reopened', { conversation_id: conv.id }, { conversationId: conv.id });
                        w.ids.push(stored.envelope.id);
                      }
                      written();
                      if (!(await w.gate)) throw new Error('rollback');
                    },
                    { eventWriter: true },
                  )
                  .catch((err: Error) => {
                    written();
                    if (err.message !== 'rollback') throw err;
                  });
                await ready;
              } else if (action.kind === 'end') {
                const w = gates[action.writer]!;
                w.open(!writers[action.writer]!.rollback);
                await w.done;
              } else {
                await readOnce(readers[action.reader]!, action.limit);
              }
            }
          } finally {
            for (const w of gates) w.open(false);
            await Promise.allSettled(gates.map((w) => w.done));
          }
          const committed = writers.flatMap((w, i) => (w.rollback ? [] : gates[i]!.ids));
          const expected = await wholeFeed(t.tenantId);
          // The feed holds exactly the committed events (beside the conversation's own events).
          const written = new Set(gates.flatMap((g) => g.ids));
          expect(expected.filter((id) => written.has(id)).sort()).to.deep.equal([...committed].sort());
          for (const reader of readers) {
            for (;;) {
              const before = reader.seen.length;
              await readOnce(reader, 3);
              if (reader.seen.length === before) break;
            }
            expect(reader.seen).to.deep.equal(expected);
          }
          // The live socket: the writes above did not go through the bus, so nudge the stream with a
          // committed event of the app, then it must show the same order.
          const nudge = await request(rt.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'nudge' }).expect(201);
          const final = await wholeFeed(t.tenantId);
          await drained(live, final[final.length - 1]!);
          const liveIds = live.frames.filter((f) => f.id).map((f) => f.id);
          expect(liveIds).to.deep.equal(final.slice(final.length - liveIds.length));
          expect(liveIds.filter((id) => written.has(id))).to.deep.equal(expected.filter((id) => written.has(id)));
          expect(nudge.body.id).to.be.a('string');
          // A socket resuming from a random point sees the rest, once, in order.
          const from = Math.floor(keys[29]! * (final.length - 1));
          const resumed = await connect(`${rt.wsUrl}?last_event_id=${final[from]}`, bearer(t.owner.accessToken));
          await drained(resumed, final[final.length - 1]!);
          expect(resumed.frames.filter((f) => f.id).map((f) => f.id)).to.deep.equal(final.slice(from + 1));
          live.close();
          resumed.close();
          eventsChecked += final.length;
        },
      ),
      { numRuns: 40, seed: Number(process.env.FC_SEED ?? 20261122) },
    );
    recordFigure('feed property', 'runs', runs);
    recordFigure('feed property', 'events checked', eventsChecked);
  });

  it('100 forced disconnects with resume under continuous writes: none lost, none doubled', async () => {
    const t: TestTenant = await createTenant();
    const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
    let writing = true;
    let sent = 0;
    const writer = (async () => {
      while (writing) {
        await request(rt.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: `m${sent}` }).expect(201);
        sent++;
      }
    })();
    const writerFailed = writer.then(() => new Promise<never>(() => undefined));
    // Handled from the start: a send that fails while a socket connects is reported by the race after it.
    writerFailed.catch(() => undefined);
    const received: string[] = [];
    let lastId: string | undefined;
    let resyncs = 0;
    for (let i = 0; i < 100; i++) {
      const socket = await connect(`${rt.wsUrl}${lastId ? `?last_event_id=${lastId}` : ''}`, bearer(t.owner.accessToken));
      // Some frames arrive, then the connection is cut without a close handshake.
      const from = socket.frames.length;
      // A send that failed ends the writing: said as itself, not as a socket that waited for nothing.
      await Promise.race([socket.next((f) => Boolean(f.id), from), writerFailed]);
      socket.ws.terminate();
      const ids = socket.frames.filter((f) => f.id).map((f) => f.id as string);
      resyncs += socket.frames.filter((f) => f.type === 'resync_required').length;
      received.push(...ids);
      lastId = ids[ids.length - 1] ?? lastId;
    }
    writing = false;
    await writer;
    // The last resume, then a sentinel written once it is in: the feed reaches a socket in order, so once
    // the sentinel's event is there, every event before it is too (the resume's replay included) and none
    // is still on its way. The last event the loop's sockets saw may already be the feed's last: waiting
    // for that event again on the resumed socket waited for a frame that must not come.
    const last = await connect(`${rt.wsUrl}?last_event_id=${lastId}`, bearer(t.owner.accessToken));
    const sentinel = await request(rt.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'sentinel' }).expect(201);
    const sentinelFrame = await last.next((f) => f.type === 'message.created' && f.data.message.id === sentinel.body.id);
    const resumed = last.frames.filter((f) => f.id).map((f) => f.id as string);
    received.push(...resumed.slice(0, resumed.indexOf(sentinelFrame.id as string)));
    last.close();
    const all = await wholeFeed(t.tenantId);
    const firstSeen = all.indexOf(received[0]!);
    const expected = all.slice(firstSeen, all.indexOf(sentinelFrame.id as string));
    const doubled = received.length - new Set(received).size;
    const lost = expected.filter((id) => !received.includes(id)).length;
    recordFigure('resume', 'disconnects', 100);
    recordFigure('resume', 'messages sent', sent);
    recordFigure('resume', 'events received', received.length);
    recordFigure('resume', 'lost', lost);
    recordFigure('resume', 'doubled', doubled);
    expect(resyncs).to.equal(0);
    expect({ lost, doubled }).to.deep.equal({ lost: 0, doubled: 0 });
    expect(received).to.deep.equal(expected);
  });

  describe('a long write transaction that writes no events does not delay delivery', () => {
    /** Delivery times (ms) from the send's answer to the socket's frame, for n messages. */
    async function deliveries(t: TestTenant, conversationId: string, socket: Client, n: number): Promise<number[]> {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const from = socket.frames.length;
        const res = await request(rt.app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conversationId, content: `d${i}` }).expect(201);
        const answered = performance.now();
        await socket.next((f) => f.type === 'message.created' && f.data.message.id === res.body.id, from);
        times.push(performance.now() - answered);
      }
      return times;
    }
    const worst = (xs: number[]) => Math.max(...xs);

    for (const where of ['another database of the same server', 'the same database, a table with no events'] as const) {
      it(`held open 15 s in ${where}: a message still reaches a socket within 100 ms of its usual time`, async () => {
        const t = await createTenant();
        const conv = await createConversation(t, {}, t.owner.accessToken, rt.app);
        const socket = await connect(rt.wsUrl, bearer(t.owner.accessToken));
        const baseline = await deliveries(t, conv.id, socket, 20);
        const url = new URL(process.env.DATABASE_URL!);
        if (where === 'another database of the same server') url.pathname = '/postgres';
        const other = new pg.Client({ connectionString: url.toString() });
        await other.connect();
        try {
          if (where !== 'another database of the same server') await other.query('CREATE TABLE IF NOT EXISTS fault_scratch (x int)');
          await other.query('BEGIN');
          // A transaction id of its own, held: it is older than everything the service does next.
          await other.query(where === 'another database of the same server' ? 'SELECT pg_current_xact_id()' : 'INSERT INTO fault_scratch VALUES (1)');
          const started = performance.now();
          const during: number[] = [];
          while (performance.now() - started < 15_000) during.push(...(await deliveries(t, conv.id, socket, 5)));
          recordFigure('long transaction', `${where}: baseline worst ms`, Math.round(worst(baseline)));
          recordFigure('long transaction', `${where}: during worst ms`, Math.round(worst(during)));
          recordFigure('long transaction', `${where}: deliveries during`, during.length);
          expect(worst(during) - worst(baseline)).to.be.lessThan(100);
        } finally {
          await other.query('ROLLBACK').catch(() => undefined);
          await other.end();
          socket.close();
        }
      });
    }
  });

  it('an event writer of one tenant holds back only its own tenant', async () => {
    const { database } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const convB = await createConversation(b, {}, b.owner.accessToken, rt.app);
    const socketB = await connect(rt.wsUrl, bearer(b.owner.accessToken));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    const slow = database.withTenant(
      a.tenantId,
      async (trx) => {
        await sql`select pg_current_xact_id()`.execute(trx);
        opened();
        await gate;
      },
      { eventWriter: true },
    );
    await isOpen;
    try {
      const res = await request(rt.app).post('/api/v1/messages').set(bearer(b.owner.accessToken)).send({ conversation_id: convB.id, content: 'not held' }).expect(201);
      await socketB.next((f) => f.type === 'message.created' && f.data.message.id === res.body.id);
    } finally {
      release();
      await slow;
      socketB.close();
    }
  });
});
