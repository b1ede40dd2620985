import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import type { FeedPage, FeedPosition, FeedRow } from '../src/events/feed.repository.ts';
import type { Connection } from '../src/realtime/connection.ts';
import { TenantStream } from '../src/realtime/tenant-stream.ts';
import type { OutgoingFrame } from '../src/realtime/wire.ts';

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
function streamOn(head: FeedPosition, extra: { onDelivered?: () => void; logError?: (err: unknown) => void } = {}) {
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
  const received = () => (conn.backlog as OutgoingFrame[]).map((f) => (JSON.parse(f.payload.toString()) as { id: string }).id);
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
