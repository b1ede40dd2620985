import type { Database } from '../db/database.ts';
import type { FeedHandoff } from '../events/outbox.ts';
import { type FeedPage, type FeedPosition, type FeedRow, feedHead, positionOfEvent, readFeed } from '../events/feed.repository.ts';
import { type Connection, deliverOrBuffer, flushBacklog, send } from './connection.ts';
import { frameFor } from './views.ts';
import { framesTogether, type OutgoingFrame } from './wire.ts';

const BATCH = 500;
/** Committed events held back by an event writer still running: how soon to look again. */
const HELD_BACK_RETRY_MS = 25;
const ERROR_RETRY_MS = 250;

export interface StreamContext {
  database: Database;
  maxBufferedBytes: number;
  retentionMs: number;
  logError(err: unknown, tenantId: string): void;
  /** Hears each event's live frames as they are sent (metrics). */
  onDelivered?: DeliveryHook;
  /**
   * The least time from one read of the feed to the next: news that comes sooner waits for it and is read
   * with what came meanwhile. A tenant busy with writers is then read in fewer, larger reads, each socket
   * written once per read; news after a quiet spell is read at once.
   */
  readGapMs?: number;
}

export type DeliveryHook = (createdAt: Date, frames: Partial<Record<Connection['audience']['kind'], number>>) => void;

const read = (ctx: StreamContext, tenantId: string, after: FeedPosition, upTo?: FeedPosition): Promise<FeedPage> =>
  ctx.database.withTenant(tenantId, (trx) => readFeed(trx, { tenantId, after, ...(upTo ? { upTo } : {}), limit: BATCH, serial: ctx.database.kind === 'pglite' }));

/**
 * Delivers a batch to sockets: each event serialised once per view, and each socket's frames of the batch
 * written together, one write per socket (the same bytes for every socket that gets the same events).
 */
function deliver(ctx: StreamContext, connections: Iterable<Connection>, rows: FeedRow[]): void {
  const views = rows.map(() => new Map<string, OutgoingFrame | null>());
  const counts = rows.map((): Partial<Record<Connection['audience']['kind'], number>> => ({}));
  const together = new Map<string, OutgoingFrame>();
  const ids = new Map<OutgoingFrame, number>();
  for (const conn of connections) {
    const frames: OutgoingFrame[] = [];
    let key = '';
    for (let i = 0; i < rows.length; i++) {
      const frame = frameFor(conn, rows[i]!, views[i]!);
      if (!frame) continue;
      counts[i]![conn.audience.kind] = (counts[i]![conn.audience.kind] ?? 0) + 1;
      frames.push(frame);
      if (rows.length > 1) {
        let id = ids.get(frame);
        if (id === undefined) ids.set(frame, (id = ids.size));
        key += `${id},`;
      }
    }
    if (frames.length === 0) continue;
    let frame = frames[0]!;
    if (frames.length > 1) {
      frame = together.get(key) ?? framesTogether(frames);
      together.set(key, frame);
    }
    deliverOrBuffer(conn, frame, ctx.maxBufferedBytes);
  }
  for (let i = 0; i < rows.length; i++) ctx.onDelivered?.(rows[i]!.created_at, counts[i]!);
}

/**
 * Handoffs of one moment (the commits one turn of the event loop saw), joined where one follows another of
 * the same tenant directly: their events go to each socket in one write (deliver).
 */
export function joinHandoffs(handoffs: readonly FeedHandoff[]): FeedHandoff[] {
  const joined: FeedHandoff[] = [];
  const lastOf = new Map<string, FeedHandoff>();
  for (const handoff of handoffs) {
    const previous = lastOf.get(handoff.tenantId);
    const end = previous?.rows[previous.rows.length - 1];
    if (previous && end && end.txid === handoff.after.txid && end.position === handoff.after.position) {
      previous.rows.push(...handoff.rows);
      continue;
    }
    const copy = { ...handoff, rows: [...handoff.rows] };
    joined.push(copy);
    lastOf.set(handoff.tenantId, copy);
  }
  return joined;
}

/**
 * One tenant's connected sockets and its position in the outbox. When told the tenant has news, it reads
 * the feed from its position and fans each event out; resuming sockets replay from the feed.
 */
export class TenantStream {
  readonly tenantId: string;
  readonly connections = new Set<Connection>();
  readonly #ctx: StreamContext;
  #cursor: FeedPosition | undefined;
  #starting: Promise<void> | undefined;
  /** Sockets waiting in join: the stream is not empty while one does, or a socket leaving meanwhile would drop it. */
  #joining = 0;
  #running = false;
  /** performance.now() when the last read of the feed began. */
  #lastRead = Number.NEGATIVE_INFINITY;
  #again = false;
  #retry: NodeJS.Timeout | undefined;
  /** Resolved once a read that began after they asked has been delivered. */
  #caughtUpWaiters: (() => void)[] = [];

  constructor(tenantId: string, ctx: StreamContext) {
    this.tenantId = tenantId;
    this.#ctx = ctx;
  }

  get empty(): boolean {
    return this.connections.size === 0 && this.#joining === 0;
  }

  /** Adds the socket and answers the stream's position: everything after it reaches the socket live. */
  async join(conn: Connection): Promise<FeedPosition> {
    this.#starting ??= this.#ctx.database
      .withTenant(this.tenantId, (trx) => feedHead(trx, this.tenantId, { serial: this.#ctx.database.kind === 'pglite' }))
      .then((head) => {
        this.#cursor = head;
        // News that arrived while the head was read was not pumped: look once now.
        queueMicrotask(() => this.wake());
      });
    this.#joining++;
    try {
      await this.#starting;
    } catch (err) {
      // The next socket tries again.
      this.#starting = undefined;
      throw err;
    } finally {
      this.#joining--;
    }
    this.connections.add(conn);
    return { ...this.#cursor! };
  }

  leave(conn: Connection): void {
    this.connections.delete(conn);
    if (this.empty) clearTimeout(this.#retry);
  }

  wake(): void {
    if (!this.#cursor) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    void this.#pump();
  }

  /**
   * A committed transaction's events, handed over by their writer (src/events/outbox.ts): delivered as they
   * are when they follow the stream's position directly, with no read in flight; otherwise news like any
   * other, read from the feed. A handoff out of order, or one after events nobody handed over, is read.
   */
  take(handoff: FeedHandoff): void {
    const cursor = this.#cursor;
    const follows = cursor !== undefined && cursor.txid === handoff.after.txid && cursor.position === handoff.after.position;
    if (!follows || this.#running || this.#caughtUpWaiters.length > 0 || handoff.rows.length === 0) {
      this.wake();
      return;
    }
    try {
      deliver(this.#ctx, this.connections, handoff.rows);
      const last = handoff.rows[handoff.rows.length - 1]!;
      this.#cursor = { txid: last.txid, position: last.position };
    } catch (err) {
      // Called from a timer: an error here would end the process. The feed has the rows; read them.
      this.#ctx.logError(err, this.tenantId);
      this.wake();
    }
  }

  /** Resolves when everything committed (and not held back) before the call has been delivered. */
  caughtUp(): Promise<void> {
    if (!this.#cursor) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.#caughtUpWaiters.push(resolve));
    this.wake();
    return done;
  }

  /**
   * Everything after the client's last event up to the position the stream had when the socket joined;
   * what the stream delivered since waits in the socket's backlog and follows, so nothing is missed or
   * repeated. Unknown or pruned events answer resync_required.
   */
  async replay(conn: Connection, lastEventId: string, upTo: FeedPosition): Promise<void> {
    const { database, maxBufferedBytes } = this.#ctx;
    try {
      const from = await database.withTenant(this.tenantId, (trx) => positionOfEvent(trx, lastEventId));
      if (!from) {
        const reason = pastRetention(lastEventId, this.#ctx.retentionMs) ? 'past_retention' : 'unknown_event';
        send(conn, JSON.stringify({ type: 'resync_required', reason }), maxBufferedBytes);
        return;
      }
      let after = from;
      for (;;) {
        // Everything up to upTo was below the horizon when the stream reached it: nothing is held back.
        const { rows } = await read(this.#ctx, this.tenantId, after, upTo);
        for (const row of rows) {
          const frame = frameFor(conn, row, new Map());
          if (frame) send(conn, frame, maxBufferedBytes);
        }
        if (rows.length < BATCH) break;
        after = rows[rows.length - 1]!;
      }
    } finally {
      flushBacklog(conn, maxBufferedBytes);
    }
  }

  async #pump(): Promise<void> {
    this.#running = true;
    let waiting: (() => void)[] = [];
    // The last read was a full batch: a backlog being caught up, the next read follows at once.
    let full = false;
    try {
      do {
        const wait = full ? 0 : this.#lastRead + (this.#ctx.readGapMs ?? 0) - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        // After the gap: what asked during it is answered by this read, not by one more.
        this.#again = false;
        waiting = this.#caughtUpWaiters.splice(0);
        this.#lastRead = performance.now();
        const { rows, heldBack } = await read(this.#ctx, this.tenantId, this.#cursor!);
        full = rows.length === BATCH;
        if (rows.length > 0) {
          deliver(this.#ctx, this.connections, rows);
          const last = rows[rows.length - 1]!;
          this.#cursor = { txid: last.txid, position: last.position };
        }
        if (full) this.#again = true;
        if (heldBack && !this.empty) this.#retryIn(HELD_BACK_RETRY_MS);
        if (!full) for (const resolve of waiting.splice(0)) resolve();
        else this.#caughtUpWaiters.unshift(...waiting.splice(0));
      } while (this.#again && !this.empty);
    } catch (err) {
      this.#caughtUpWaiters.unshift(...waiting);
      this.#ctx.logError(err, this.tenantId);
      if (!this.empty) this.#retryIn(ERROR_RETRY_MS);
    } finally {
      this.#running = false;
    }
  }

  #retryIn(ms: number): void {
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.wake(), ms);
  }
}

/** Event ids are UUIDv7: their first 48 bits are the creation time in milliseconds. */
function pastRetention(eventId: string, retentionMs: number): boolean {
  const hex = /^evt_([0-9a-f]{8})-([0-9a-f]{4})/.exec(eventId);
  if (!hex) return false;
  return Date.now() - Number.parseInt(hex[1]! + hex[2]!, 16) > retentionMs;
}
