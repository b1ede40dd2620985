import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events/bus.ts';
import type { FeedHandoff } from '../events/outbox.ts';
import { AppError } from '../shared/errors.ts';
import { CONVERSATION_ID } from '../shared/ids.ts';
import { CLOSE, type Connection, flushBacklog, send, sendError } from './connection.ts';
import { authenticateUpgrade, type CredentialDeps, refuseUpgrade, type UpgradeIdentity } from './credentials.ts';
import type { Fanout } from './fanout.ts';
import { announcePresence, deliverLive, type LiveContext, relayTyping } from './live.ts';
import type { PresenceTracker } from './presence-tracker.ts';
import { type DeliveryHook, joinHandoffs, TenantStream, type StreamContext } from './tenant-stream.ts';
import { armExpiry, heartbeat, markVisitorsSeen, recheckApiKeys, recheckMembers, type UpkeepContext } from './upkeep.ts';
import type { SessionChange } from '../auth/session-cache.ts';

export { CLOSE } from './connection.ts';

export const WS_PATH = '/api/v1/ws';

const ignoreError = () => undefined;
/** Frames of one socket read and not yet handled: past it the client is flooding, and is closed. */
export const MAX_FRAMES_WAITING = 64;

export interface GatewayOptions {
  heartbeatMs: number;
  maxBufferedBytes: number;
  maxFrameBytes: number;
  retentionMs: number;
  /** The least time between two reads of one tenant's feed (StreamContext.readGapMs). */
  readGapMs: number;
}

export const DEFAULT_GATEWAY_OPTIONS: GatewayOptions = {
  heartbeatMs: 30_000,
  maxBufferedBytes: 1024 * 1024,
  maxFrameBytes: 64 * 1024,
  retentionMs: 7 * 24 * 3600 * 1000,
  // Without a gap a busy tenant's sockets would read once per commit or so, and each read is a write to
  // every socket and a read on every client: 25 ms kept more of the send rate than 10 ms for a delivery p99
  // still in tens of milliseconds (bench:messages, alternating pairs). A quiet tenant's news waits for no
  // gap, a busy one's at most this.
  readGapMs: 25,
};

export interface GatewayDeps extends CredentialDeps {
  database: Database;
  bus: EventBus;
  fanout: Fanout;
  presence: PresenceTracker;
  logger: Logger;
  /** Ended logins and changed memberships, from any instance: their sockets are checked at once. */
  sessionChanges?: { onChange(listener: (change: SessionChange) => void): void; onGap?(listener: () => void): void };
  options?: Partial<GatewayOptions>;
  /** Hears each event's live frames as they are sent (metrics). */
  onDelivered?: DeliveryHook;
}

/**
 * The WebSocket gateway: upgrades (credentials.ts), one stream per tenant with sockets that reads the outbox
 * in feed order and replays for resuming sockets (tenant-stream.ts), what each audience may see (views.ts),
 * presence and typing (live.ts), heartbeat and expiry (upkeep.ts). Documented in openapi/events.asyncapi.yaml.
 */
export class RealtimeGateway {
  readonly #deps: GatewayDeps;
  readonly #options: GatewayOptions;
  readonly #wss: WebSocketServer;
  readonly #streams = new Map<string, TenantStream>();
  readonly #connections = new Set<Connection>();
  readonly #stream: StreamContext;
  readonly #live: LiveContext;
  readonly #upkeep: UpkeepContext;
  readonly #timer: NodeJS.Timeout;
  readonly #unsubscribe: () => void;
  #closing = false;
  /** Handed over since the last turn of the event loop: taken together (joinHandoffs). */
  #handoffs: FeedHandoff[] = [];

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    const options = (this.#options = { ...DEFAULT_GATEWAY_OPTIONS, ...deps.options });
    const { database, fanout, presence, logger } = deps;
    this.#stream = {
      database,
      maxBufferedBytes: options.maxBufferedBytes,
      retentionMs: options.retentionMs,
      readGapMs: options.readGapMs,
      logError: (err, tenantId) => logger.error({ err, tenant_id: tenantId }, 'event stream failed; retrying'),
      ...(deps.onDelivered ? { onDelivered: deps.onDelivered } : {}),
    };
    this.#live = { database, fanout, presence, maxBufferedBytes: options.maxBufferedBytes };
    this.#upkeep = { database, presence, findSession: deps.findSession, apiKeyLive: deps.apiKeyLive, logger };
    this.#wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: options.maxFrameBytes });
    // Committed events are not carried to sockets: each instance is told which tenants have news and reads
    // them. A writer of this instance hands its events over as the feed holds them when their place there is
    // final (src/events/outbox.ts), and a stream they follow delivers them without a read (tenant-stream.ts);
    // the other instances are told and read. After the writer's own answer has gone (setImmediate): a send
    // is not kept waiting while its event is written to every socket of the tenant.
    this.#unsubscribe = deps.bus.subscribe(
      (events, handoff) => {
        const tenantIds = [...new Set(events.map((e) => e.envelope.tenant_id))];
        if (!handoff) return fanout.notify(tenantIds);
        if (this.#handoffs.push(handoff) === 1) setImmediate(() => this.#takeHandoffs());
        fanout.notifyOthers(tenantIds);
      },
      { wantsHandoff: (tenantId) => this.#streams.has(tenantId) },
    );
    void fanout.subscribe({
      onNotify: (tenantId) => this.#streams.get(tenantId)?.wake(),
      // Delivery never waits on a notification that may be lost: every stream reads from its position.
      onMissed: () => {
        for (const stream of this.#streams.values()) stream.wake();
      },
      onLive: (signal) => {
        const stream = this.#streams.get(signal.tenantId);
        if (stream) deliverLive(stream.connections, signal, options.maxBufferedBytes);
      },
    });
    this.#timer = setInterval(() => void heartbeat(this.#upkeep, this.#connections), options.heartbeatMs);
    deps.sessionChanges?.onChange((change) => void this.#recheck(change));
    // Changes made while this instance could not hear them: every login and key is checked now, not at
    // the next heartbeat.
    deps.sessionChanges?.onGap?.(() => void this.#recheckAll());
  }

  #takeHandoffs(): void {
    for (const handoff of joinHandoffs(this.#handoffs.splice(0))) this.#streams.get(handoff.tenantId)?.take(handoff);
  }

  async #recheckAll(): Promise<void> {
    const connections = [...this.#connections];
    await recheckMembers(this.#upkeep, connections);
    await recheckApiKeys(this.#upkeep, connections);
  }

  /** Re-checks the sockets a session change may have ended, instead of waiting for the next heartbeat. */
  async #recheck(change: SessionChange): Promise<void> {
    if ('apiKeyId' in change) {
      // Checked, not closed blindly: a socket opened with the rotated key's new value stays.
      const keyed = [...this.#connections].filter((c) => c.audience.kind === 'integration' && c.audience.keyId === change.apiKeyId);
      if (keyed.length > 0) await recheckApiKeys(this.#upkeep, keyed);
      return;
    }
    const affected = [...this.#connections].filter(
      (c) =>
        c.audience.kind === 'member' &&
        ('sessionId' in change ? c.audience.sessionId === change.sessionId : c.audience.userId === change.userId && (change.tenantId ?? c.tenantId) === c.tenantId),
    );
    if (affected.length > 0) await recheckMembers(this.#upkeep, affected);
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Node hands the socket over without an 'error' listener: a client (or the balancer) resetting it
      // while the upgrade is authenticated or refused (an instance draining after SIGTERM) would end the
      // process on an unhandled ECONNRESET. ws adds its own once the upgrade completes. A function of the
      // module, not a closure: the listener stays for the socket's life, and a closure made here would keep
      // this upgrade's request, URL and head with it (bench:sockets, heap per idle socket).
      socket.on('error', ignoreError);
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== WS_PATH) return refuseUpgrade(socket, new AppError('ERR_NOT_FOUND', 'No such route'));
      authenticateUpgrade(this.#deps, req, url).then(
        (identity) => {
          if (this.#closing) return refuseUpgrade(socket, new AppError('ERR_UNAVAILABLE', 'The server is shutting down'));
          this.#wss.handleUpgrade(req, socket, head, (ws) => void this.#open(ws, identity, url.searchParams.get('last_event_id')));
        },
        (err: unknown) => refuseUpgrade(socket, err instanceof AppError ? err : new AppError('ERR_INTERNAL', 'Unexpected error')),
      );
    });
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Open connections by audience (metrics). */
  connectionsByAudience(): Record<Connection['audience']['kind'], number> {
    const counts = { member: 0, integration: 0, visitor: 0 };
    for (const conn of this.#connections) counts[conn.audience.kind]++;
    return counts;
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#timer);
    this.#unsubscribe();
    for (const conn of this.#connections) conn.ws.close(CLOSE.goingAway, 'server shutting down');
    await this.#deps.fanout.close();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  /**
   * Resolves when this instance has delivered to the tenant's sockets every event committed before the call
   * (and not held back by a running writer): a sentinel for "nothing more is on its way".
   */
  async caughtUp(tenantId: string): Promise<void> {
    await this.#streams.get(tenantId)?.caughtUp();
  }

  /** Checks every connection's session now instead of at the next heartbeat (tests, and after revocations). */
  async checkSessions(): Promise<void> {
    await heartbeat(this.#upkeep, this.#connections);
  }

  async #open(ws: WebSocket, identity: UpgradeIdentity, lastEventId: string | null): Promise<void> {
    const conn: Connection = {
      id: randomUUID(),
      ws,
      tenantId: identity.tenantId,
      audience: identity.audience,
      status: 'online',
      alive: true,
      backlog: [],
      expiresAt: identity.expiresAt,
      expiryTimer: undefined,
    };
    this.#connections.add(conn);
    armExpiry(conn);
    ws.on('pong', () => (conn.alive = true));
    // One frame at a time, in the order sent: a typing frame's lookup must not let a later `is_typing:
    // false` overtake it, and a ping answered after everything before it is what a client can wait for.
    let inbox = Promise.resolve();
    let waiting = 0;
    ws.on('message', (raw, isBinary) => {
      if (++waiting > MAX_FRAMES_WAITING) {
        ws.close(CLOSE.protocol, 'too many frames at once');
        return;
      }
      const text = raw.toString();
      inbox = inbox
        // A frame that waited past its socket's close is dropped: run after #onClose, a presence frame
        // would mark a member present who is gone.
        .then(() => (ws.readyState === ws.OPEN ? this.#onFrame(conn, text, isBinary) : undefined))
        .catch((err: unknown) => this.#deps.logger.error({ err }, 'socket frame failed'))
        .finally(() => waiting--);
    });
    ws.on('close', () => void this.#onClose(conn));
    ws.on('error', () => undefined);
    const { maxBufferedBytes, heartbeatMs } = this.#options;
    try {
      // Joined, present and seen before the welcome: a client may act as soon as it is welcomed.
      const stream = this.#streamOf(conn.tenantId);
      const joinedAt = await stream.join(conn);
      // Closed while it joined: its close found it in no stream's sockets.
      if (ws.readyState === ws.CLOSED) return this.#leaveStream(conn);
      await announcePresence(this.#live, conn, 'online');
      await markVisitorsSeen(this.#upkeep, [conn]);
      const welcome = { type: 'welcome', connection_id: conn.id, audience: conn.audience.kind, heartbeat_seconds: Math.round(heartbeatMs / 1000) };
      send(conn, JSON.stringify(welcome), maxBufferedBytes);
      if (lastEventId) await stream.replay(conn, lastEventId, joinedAt);
      else flushBacklog(conn, maxBufferedBytes);
    } catch (err) {
      // The database is away: the client reconnects (with last_event_id) when it can.
      this.#deps.logger.error({ err, tenant_id: conn.tenantId }, 'socket could not join its stream');
      // Now, not at the close: a socket already closed during its join hears no second close.
      this.#leaveStream(conn);
      ws.close(CLOSE.goingAway, 'try again');
    }
  }

  async #onClose(conn: Connection): Promise<void> {
    clearTimeout(conn.expiryTimer);
    this.#connections.delete(conn);
    this.#leaveStream(conn);
    await announcePresence(this.#live, conn, undefined).catch((err) => this.#deps.logger.error({ err }, 'presence update failed'));
  }

  async #onFrame(conn: Connection, raw: string, isBinary: boolean): Promise<void> {
    let frame: { type?: unknown; conversation_id?: unknown; is_typing?: unknown; status?: unknown };
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(raw) as typeof frame;
    } catch {
      conn.ws.close(CLOSE.protocol, 'frames are JSON text');
      return;
    }
    // `null`, a number, an array: JSON, but no frame.
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
      conn.ws.close(CLOSE.protocol, 'frames are JSON objects');
      return;
    }
    try {
      if (frame.type === 'ping') return send(conn, JSON.stringify({ type: 'pong' }), this.#options.maxBufferedBytes);
      if (frame.type === 'presence' && conn.audience.kind === 'member' && (frame.status === 'online' || frame.status === 'away')) {
        conn.status = frame.status;
        // Not awaited: the frames behind it need nothing from the tracker, and one that hangs (Redis
        // away) must not hold the socket's pings and typing until the client is closed as a flood.
        // The tracker's writes go out in the order made.
        void announcePresence(this.#live, conn, frame.status).catch((err: unknown) => {
          this.#deps.logger.error({ err }, 'presence update failed');
          sendError(conn, 'ERR_UNAVAILABLE', 'Try again shortly', this.#options.maxBufferedBytes);
        });
        return;
      }
      if (frame.type === 'typing' && typeof frame.conversation_id === 'string' && typeof frame.is_typing === 'boolean') {
        // Checked before the lookup: the database refuses some strings (a NUL) instead of finding nothing.
        if (!CONVERSATION_ID.test(frame.conversation_id)) {
          return sendError(conn, 'ERR_VALIDATION', 'conversation_id must be conv_ followed by a UUIDv7', this.#options.maxBufferedBytes);
        }
        return await relayTyping(this.#live, conn, frame.conversation_id, frame.is_typing);
      }
    } catch (err) {
      this.#deps.logger.error({ err }, 'socket frame failed');
      sendError(conn, 'ERR_UNAVAILABLE', 'Try again shortly', this.#options.maxBufferedBytes);
      return;
    }
    conn.ws.close(CLOSE.protocol, 'unknown frame');
  }

  #leaveStream(conn: Connection): void {
    const stream = this.#streams.get(conn.tenantId);
    stream?.leave(conn);
    if (stream?.empty) this.#streams.delete(conn.tenantId);
  }

  #streamOf(tenantId: string): TenantStream {
    let stream = this.#streams.get(tenantId);
    if (!stream) {
      stream = new TenantStream(tenantId, this.#stream);
      this.#streams.set(tenantId, stream);
    }
    return stream;
  }
}
