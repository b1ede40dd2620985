import { expect } from 'chai';
import type { Database } from '../../src/db/database.ts';
import type { FeedPage, FeedPosition, FeedRow } from '../../src/events/feed.repository.ts';
import type { Connection } from '../../src/realtime/connection.ts';
import { joinHandoffs, TenantStream } from '../../src/realtime/tenant-stream.ts';
import type { OutgoingFrame } from '../../src/realtime/wire.ts';
import { eventually } from '../support/eventually.ts';

const TENANT = 'tn_00000000-0000-7000-8000-000000000001';

const row = (position: number): FeedRow => ({
  id: `evt_${position}`,
  type: 'conversation.reopened',
  tenant_id: TENANT,
  created_at: new Date(0),
  data: { conversation_id: 'conv_1' },
  conversation_id: 'conv_1',
  internal: false,
  recipients: [],
  visitor_id: null,
  workflow_depth: 0,
  txid: String(100 + position),
  position,
});

/**
 * A stream on a database whose answers the test gives: the first transaction (the join) answers the head,
 * every later one (a read of the feed) waits for `answer`.
 */
function streamOn(head: FeedPosition, extra: { onDelivered?: () => void; logError?: (err: unknown) => void; readGapMs?: number } = {}) {
  const reads: { after: FeedPosition; answer: (page: FeedPage) => void }[] = [];
  let joined = false;
  const database = {
    kind: 'pglite',
    withTenant: async () => {
      if (!joined) {
        joined = true;
        return head;
      }
      return new Promise<FeedPage>((answer) => reads.push({ after: head, answer }));
    },
  } as unknown as Database;
  const stream = new TenantStream(TENANT, { database, maxBufferedBytes: 1 << 20, retentionMs: 1, logError: () => undefined, ...extra });
  // A socket before its welcome keeps what it is sent in its backlog: the test reads it there.
  const conn = { id: 'c', tenantId: TENANT, audience: { kind: 'member', userId: 'u', sessionId: 's' }, backlog: [] } as unknown as Connection;
  const received = () => (conn.backlog as OutgoingFrame[]).flatMap((f) => f.payloads.map((p) => (JSON.parse(p.toString()) as { id: string }).id));
  return { stream, conn, reads, received };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('a tenant stream taking events handed over by their writer', () => {
  it('delivers them at once when they follow its position', async () => {
    const s = streamOn({ txid: '100', position: 0 });
    await s.stream.join(s.conn);
    await settle();
    s.reads.splice(0).forEach((r) => r.answer({ rows: [], heldBack: false })); // the look after joining
    await settle();
    s.stream.take({ tenantId: TENANT, after: { txid: '100', position: 0 }, rows: [row(1), row(2)] });
    expect(s.received()).to.deep.equal(['evt_1', 'evt_2']);
    expect(s.reads).to.have.length(0);
  });

  it('leaves them to the read in flight, which may hold them too: each event once', async () => {
    const s = streamOn({ txid: '100', position: 0 });
    await s.stream.join(s.conn);
    await settle();
    // The look after joining is still reading when the writer's handoff comes.
    expect(s.reads).to.have.length(1);
    s.stream.take({ tenantId: TENANT, after: { txid: '100', position: 0 }, rows: [row(1)] });
    s.reads.shift()!.answer({ rows: [row(1)], heldBack: false });
    await settle();
    // The read goes again (news came while it ran) and finds nothing more.
    s.reads.splice(0).forEach((r) => r.answer({ rows: [], heldBack: false }));
    await settle();
    expect(s.received()).to.deep.equal(['evt_1']);
  });

  it('reads the feed when they do not follow its position', async () => {
    const s = streamOn({ txid: '100', position: 0 });
    await s.stream.join(s.conn);
    await settle();
    s.reads.splice(0).forEach((r) => r.answer({ rows: [], heldBack: false }));
    await settle();
    // Event 1 was committed by a writer that handed nothing over.
    s.stream.take({ tenantId: TENANT, after: { txid: '101', position: 1 }, rows: [row(2)] });
    expect(s.received()).to.deep.equal([]);
    expect(s.reads).to.have.length(1);
    s.reads.shift()!.answer({ rows: [row(1), row(2)], heldBack: false });
    await settle();
    expect(s.received()).to.deep.equal(['evt_1', 'evt_2']);
  });

  it('that fail to be delivered are logged and read again, never thrown out of the timer that took them', async () => {
    const logged: unknown[] = [];
    let failures = 1;
    const s = streamOn(
      { txid: '100', position: 0 },
      {
        onDelivered: () => {
          if (failures-- > 0) throw new Error('a hook that fails');
        },
        logError: (err) => logged.push(err),
      },
    );
    await s.stream.join(s.conn);
    await settle();
    s.reads.splice(0).forEach((r) => r.answer({ rows: [], heldBack: false }));
    await settle();
    expect(() => s.stream.take({ tenantId: TENANT, after: { txid: '100', position: 0 }, rows: [row(1)] })).not.to.throw();
    expect(logged).to.have.length(1);
    expect(s.reads, 'the feed is read instead').to.have.length(1);
  });
});

describe('a tenant stream under a stream of news', () => {
  it('reads at once after a quiet spell, then no sooner than the gap after its last read, with everything that came meanwhile', async () => {
    const gap = 150;
    const s = streamOn({ txid: '100', position: 0 }, { readGapMs: gap });
    const began = performance.now();
    await s.stream.join(s.conn);
    await settle();
    expect(s.reads, 'the look after joining: nothing was read before').to.have.length(1);
    s.reads.shift()!.answer({ rows: [row(1)], heldBack: false });
    await settle();
    // Three commits' news right after: one read, after the gap.
    s.stream.wake();
    s.stream.wake();
    s.stream.wake();
    await settle();
    expect(s.reads, 'no read before the gap has passed').to.have.length(0);
    await eventually(() => s.reads.length > 0, 'the read after the gap', { everyMs: 5 });
    // Two milliseconds of slack: libuv counts timers in whole milliseconds on a loop clock read once per
    // turn, so a timer can fire up to about a millisecond before its due time by performance.now() (CI saw
    // 148.93 ms for a gap of 150 with one millisecond of slack).
    expect(performance.now() - began, 'the first read began after `began`').to.be.at.least(gap - 2);
    s.reads.shift()!.answer({ rows: [row(2), row(3), row(4)], heldBack: false });
    await settle();
    // The news came during the gap, before the read: no read after it. A read after it would wait one gap
    // from the read's start on a timer due before this one, and Node runs timers in the order they are due:
    // this wait ends after such a read has asked the database, however slow the machine.
    await new Promise((resolve) => setTimeout(resolve, 2 * gap));
    expect(s.reads, 'one read for the three').to.have.length(0);
    expect(s.received()).to.deep.equal(['evt_1', 'evt_2', 'evt_3', 'evt_4']);
  });

  it('reads on at once after a full batch: a backlog is caught up without gaps', async () => {
    const s = streamOn({ txid: '100', position: 0 }, { readGapMs: 60_000 });
    await s.stream.join(s.conn);
    await settle();
    s.reads.shift()!.answer({ rows: Array.from({ length: 500 }, (_, i) => row(i + 1)), heldBack: false });
    await settle();
    expect(s.reads, 'the next read, not a minute later').to.have.length(1);
    s.reads.shift()!.answer({ rows: [row(501)], heldBack: false });
    await settle();
    expect(s.received()).to.have.length(501);
  });
});

describe('a tenant stream and its sockets', () => {
  it('is not empty while a socket waits in join, so a socket leaving meanwhile does not leave it behind unread', async () => {
    let answerHead!: (head: FeedPosition) => void;
    const database = { kind: 'pglite', withTenant: () => new Promise<FeedPosition>((r) => (answerHead = r)) } as unknown as Database;
    const stream = new TenantStream(TENANT, { database, maxBufferedBytes: 1 << 20, retentionMs: 1, logError: () => undefined });
    const joining = { id: 'joining', backlog: [] } as unknown as Connection;
    const leaving = { id: 'leaving', backlog: [] } as unknown as Connection;
    const joined = stream.join(joining);
    stream.leave(leaving);
    expect(stream.empty, 'a socket is joining').to.equal(false);
    answerHead({ txid: '100', position: 0 });
    await joined;
    expect(stream.empty).to.equal(false);
    stream.leave(joining);
    expect(stream.empty).to.equal(true);
  });

  it('whose join failed is empty again: the gateway drops it when that socket closes', async () => {
    const database = { kind: 'pglite', withTenant: () => Promise.reject(new Error('the database is away')) } as unknown as Database;
    const stream = new TenantStream(TENANT, { database, maxBufferedBytes: 1 << 20, retentionMs: 1, logError: () => undefined });
    const conn = { id: 'c', backlog: [] } as unknown as Connection;
    await stream.join(conn).then(
      () => expect.fail('joined'),
      (err: Error) => expect(err.message).to.equal('the database is away'),
    );
    expect(stream.empty).to.equal(true);
  });
});

describe('events of one moment, together', () => {
  const at = (position: number): FeedPosition => ({ txid: String(100 + position), position });
  const OTHER = 'tn_00000000-0000-7000-8000-000000000002';

  it('handoffs of a tenant are joined where one follows the last directly, and never otherwise', () => {
    const handoffs = [
      { tenantId: TENANT, after: at(0), rows: [row(1)] },
      { tenantId: OTHER, after: at(0), rows: [{ ...row(1), tenant_id: OTHER }] },
      { tenantId: TENANT, after: at(1), rows: [row(2), row(3)] },
      // Not after event 3: a writer in between handed nothing over.
      { tenantId: TENANT, after: at(4), rows: [row(5)] },
      { tenantId: TENANT, after: at(5), rows: [row(6)] },
    ];
    const joined = joinHandoffs(handoffs);
    expect(joined.map((h) => [h.tenantId === TENANT ? 'mine' : 'other', h.after.position, h.rows.map((r) => r.position)])).to.deep.equal([
      ['mine', 0, [1, 2, 3]],
      ['other', 0, [1]],
      ['mine', 4, [5, 6]],
    ]);
    expect(handoffs[0]!.rows, 'what was handed over is left as it was').to.have.length(1);
  });

  it('a batch reaches each socket in one write of every frame in order, the same bytes for sockets that get the same events', async () => {
    const s = streamOn({ txid: '100', position: 0 });
    const member = (id: string) => ({ id, tenantId: TENANT, audience: { kind: 'member', userId: id, sessionId: id }, backlog: [] }) as unknown as Connection;
    const visitor = { id: 'v', tenantId: TENANT, audience: { kind: 'visitor', visitorId: 'vis_1' }, backlog: [] } as unknown as Connection;
    const [a, b] = [member('a'), member('b')];
    for (const conn of [a, b, visitor]) await s.stream.join(conn);
    await settle();
    s.reads.splice(0).forEach((r) => r.answer({ rows: [], heldBack: false }));
    await settle();
    const forVisitor: FeedRow = { ...row(2), type: 'message.created', visitor_id: 'vis_1', data: { conversation_id: 'conv_1', message: {} } as never };
    s.stream.take({ tenantId: TENANT, after: at(0), rows: [row(1), forVisitor, row(3)] });
    const [fa, fb, fv] = [a, b, visitor].map((c) => c.backlog as OutgoingFrame[]);
    expect(fa, 'one write').to.have.length(1);
    expect(fb![0], 'the same bytes').to.equal(fa![0]);
    const ids = (f: OutgoingFrame) => f.payloads.map((p) => (JSON.parse(p.toString()) as { id: string }).id);
    expect(ids(fa![0]!)).to.deep.equal(['evt_1', 'evt_2', 'evt_3']);
    expect(fv!.flatMap(ids), 'only what is for the visitor').to.deep.equal(['evt_2']);
    // The write holds each frame whole, header and text, one after the other.
    const frames: string[] = [];
    for (let wire = fa![0]!.wire; wire.length > 0; ) {
      expect(wire[0], 'a final text frame').to.equal(0x81);
      let length = wire[1]! & 0x7f;
      let offset = 2;
      if (length === 126) [length, offset] = [wire.readUInt16BE(2), 4];
      frames.push(wire.subarray(offset, offset + length).toString());
      wire = wire.subarray(offset + length);
    }
    expect(frames.map((f) => (JSON.parse(f) as { id: string }).id)).to.deep.equal(['evt_1', 'evt_2', 'evt_3']);
  });
});
