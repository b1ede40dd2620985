import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { TokenService } from '../auth/tokens.ts';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events/bus.ts';
import { type FeedPosition, type FeedRow, feedHead, positionOfEvent, readFeed } from '../events/feed.repository.ts';
import type { ActiveMembership } from '../http/access.ts';
import { problemBody, statusOf } from '../http/problem.ts';
import { AppError } from '../shared/errors.ts';
import type { Fanout, LiveSignal } from './fanout.ts';
import type { ConnectionStatus, PresenceTracker } from './presence-tracker.ts';
import type { TicketStore } from './tickets.ts';

export const WS_PATH = '/api/v1/ws';

/** Documented in openapi/events.asyncapi.yaml. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocol: 1008,
  tooBig: 1009,
  credentials: 4001,
  tooSlow: 4008,
} as const;

export interface GatewayOptions {
  heartbeatMs: number;
  maxBufferedBytes: number;
  maxFrameBytes: number;
  retentionMs: number;
}

export const DEFAULT_GATEWAY_OPTIONS: GatewayOptions = {
  heartbeatMs: 30_000,
  maxBufferedBytes: 1024 * 1024,
  maxFrameBytes: 64 * 1024,
  retentionMs: 7 * 24 * 3600 * 1000,
};

export interface GatewayDeps {
  database: Database;
  bus: EventBus;
  fanout: Fanout;
  tokens: TokenService;
  tickets: TicketStore;
  presence: PresenceTracker;
  findSession(tenantId: string, userId: string, sessionId: string): Promise<{ sessionLive: boolean; membership: ActiveMembership | undefined }>;
  findApiKey(key: string): Promise<{ keyId: string; tenantId: string; scopes: string[] } | undefined>;
  /** A visitor socket's widget rules (domains for the Origin, identity), as for widget calls. */
  authenticateVisitor?: (token: string, origin: string | undefined) => Promise<unknown>;
  logger: Logger;
  options?: Partial<GatewayOptions>;
}

type Audience =
  | { kind: 'member'; userId: string; sessionId: string }
  | { kind: 'integration'; keyId: string }
  | { kind: 'visitor'; visitorId: string };

interface Connection {
  id: string;
  ws: WebSocket;
  tenantId: string;
  audience: Audience;
  status: ConnectionStatus;
  alive: boolean;
  /** Resuming: live deliveries wait here until the backlog is sent. */
  backlog: string[] | undefined;
  expiresAt: number | undefined;
  expiryTimer: NodeJS.Timeout | undefined;
}

/** setTimeout's limit: a longer delay overflows and fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type Position = FeedPosition;
type EventRow = FeedRow & { data: Record<string, unknown> };

/** The events a visitor may see about their own conversations, none of them internal. */
const VISITOR_EVENT_TYPES = new Set(['conversation.created', 'conversation.updated', 'conversation.closed', 'conversation.reopened', 'message.created']);

const BATCH = 500;

// Visitors never learn who in the team does what.
function forVisitor(row: EventRow): Record<string, unknown> {
  const data = structuredClone(row.data) as Record<string, any>;
  if (data.message && data.message.sender_type !== 'visitor') data.message.sender_id = null;
  if (data.conversation) {
    data.conversation.assigned_to = null;
    data.conversation.assigned_user_id = null;
    data.conversation.department_id = null;
    data.conversation.unread_count = 0;
  }
  return data;
}

const envelopeOf = (row: EventRow, data: unknown) =>
  JSON.stringify({ id: row.id, type: row.type, tenant_id: row.tenant_id, created_at: row.created_at.toISOString(), data });

/**
 * The WebSocket gateway. Each tenant with connected sockets has a stream that reads the outbox in
 * commit-safe order ((txid, position), below the snapshot's xmin) whenever an instance says the tenant has
 * news, and fans each event out, serialised once per audience. Resuming sockets replay from the outbox.
 */
export class RealtimeGateway {
  readonly #deps: GatewayDeps;
  readonly #options: GatewayOptions;
  readonly #wss: WebSocketServer;
  readonly #streams = new Map<string, TenantStream>();
  readonly #connections = new Set<Connection>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #unsubscribe: () => void;
  #closing = false;

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    this.#options = { ...DEFAULT_GATEWAY_OPTIONS, ...deps.options };
    this.#wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: this.#options.maxFrameBytes });
    this.#unsubscribe = deps.bus.subscribe((events) => deps.fanout.notify([...new Set(events.map((e) => e.envelope.tenant_id))]));
    deps.fanout.subscribe({
      onNotify: (tenantId) => this.#streams.get(tenantId)?.wake(),
      onLive: (signal) => this.#deliverLive(signal),
    });
    this.#timers.push(setInterval(() => void this.#heartbeat(), this.#options.heartbeatMs));
    this.#timers.push(setInterval(() => void this.#prune(), 3600_000));
    void this.#prune();
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== WS_PATH) {
        refuse(socket, new AppError('ERR_NOT_FOUND', 'No such route'));
        return;
      }
      this.#authenticate(req, url).then(
        (auth) => {
          if (this.#closing) return refuse(socket, new AppError('ERR_UNAVAILABLE', 'The server is shutting down'));
          this.#wss.handleUpgrade(req, socket, head, (ws) => void this.#open(ws, auth, url.searchParams.get('last_event_id')));
        },
        (err: unknown) => refuse(socket, err instanceof AppError ? err : new AppError('ERR_INTERNAL', 'Unexpected error')),
      );
    });
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  async close(): Promise<void> {
    this.#closing = true;
    for (const t of this.#timers) clearInterval(t);
    this.#unsubscribe();
    for (const conn of this.#connections) conn.ws.close(CLOSE.goingAway, 'server shutting down');
    await this.#deps.fanout.close();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  // ---- connecting ------------------------------------------------------------------------------------

  async #authenticate(req: IncomingMessage, url: URL): Promise<{ tenantId: string; audience: Audience; expiresAt?: number }> {
    const { tokens } = this.#deps;
    const authorization = req.headers.authorization;
    const bearer = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined;
    const visitorToken = url.searchParams.get('visitor_token') ?? (bearer && tokens.isVisitorToken(bearer) ? bearer : undefined);
    if (visitorToken) {
      const claims = tokens.verifyVisitorToken(visitorToken);
      // Sessions from the widget name their widget: its domains and identity rule hold here too.
      if (claims.widgetId && this.#deps.authenticateVisitor) await this.#deps.authenticateVisitor(visitorToken, req.headers.origin);
      return { tenantId: claims.tenantId, audience: { kind: 'visitor', visitorId: claims.visitorId }, expiresAt: claims.expiresAt };
    }
    const ticket = url.searchParams.get('ticket');
    if (ticket) {
      const data = await this.#deps.tickets.consume(ticket);
      if (!data) throw new AppError('ERR_UNAUTHENTICATED', 'The ticket is unknown, used or expired');
      await this.#checkMember(data.tenantId, data.userId, data.sessionId);
      return { tenantId: data.tenantId, audience: { kind: 'member', userId: data.userId, sessionId: data.sessionId } };
    }
    if (bearer) {
      const claims = tokens.verifyAccessToken(bearer);
      const header = req.headers['x-tenant-id'];
      const tenantId = typeof header === 'string' ? header : claims.tenantId;
      await this.#checkMember(tenantId, claims.userId, claims.sessionId);
      return {
        tenantId,
        audience: { kind: 'member', userId: claims.userId, sessionId: claims.sessionId },
        ...(tokens.expiryOf(bearer) ? { expiresAt: tokens.expiryOf(bearer)! } : {}),
      };
    }
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string') {
      const tenantHeader = req.headers['x-tenant-id'];
      const key = await this.#deps.findApiKey(apiKey);
      if (!key || typeof tenantHeader !== 'string') throw new AppError('ERR_UNAUTHENTICATED', 'Send a valid API key with X-Tenant-ID');
      if (key.tenantId !== tenantHeader) throw new AppError('ERR_FORBIDDEN', 'The API key does not belong to the tenant in X-Tenant-ID');
      if (!key.scopes.includes('conversations:read')) throw new AppError('ERR_FORBIDDEN', 'The API key lacks the scope conversations:read');
      return { tenantId: key.tenantId, audience: { kind: 'integration', keyId: key.keyId } };
    }
    throw new AppError('ERR_UNAUTHENTICATED', 'Authenticate the upgrade: Authorization, X-API-Key with X-Tenant-ID, ?ticket= or ?visitor_token=');
  }

  async #checkMember(tenantId: string, userId: string, sessionId: string): Promise<void> {
    const { sessionLive, membership } = await this.#deps.findSession(tenantId, userId, sessionId);
    if (!sessionLive) throw new AppError('ERR_UNAUTHENTICATED', 'The login has ended: log in again');
    if (!membership) throw new AppError('ERR_FORBIDDEN', 'You are not an active member of this tenant');
  }

  async #open(ws: WebSocket, auth: { tenantId: string; audience: Audience; expiresAt?: number }, lastEventId: string | null) {
    const conn: Connection = {
      id: randomUUID(),
      ws,
      tenantId: auth.tenantId,
      audience: auth.audience,
      status: 'online',
      alive: true,
      // Every socket buffers what the stream delivers until it has been welcomed (and has resumed).
      backlog: [],
      expiresAt: auth.expiresAt,
      expiryTimer: undefined,
    };
    this.#connections.add(conn);
    // Visitor tokens outlive what a timer can wait for; those are checked at each heartbeat instead.
    const untilExpiry = auth.expiresAt ? auth.expiresAt - Date.now() : undefined;
    if (untilExpiry !== undefined && untilExpiry <= MAX_TIMER_MS) {
      conn.expiryTimer = setTimeout(() => ws.close(CLOSE.credentials, 'credential expired'), Math.max(0, untilExpiry));
    }
    ws.on('pong', () => (conn.alive = true));
    ws.on('message', (raw, isBinary) => void this.#onFrame(conn, raw.toString(), isBinary));
    ws.on('close', () => void this.#onClose(conn));
    ws.on('error', () => undefined);
    // Joined, present and seen before the welcome: a client may act as soon as it is welcomed.
    const joinedAt = await this.#streamOf(conn.tenantId).join(conn);
    await this.#announce(conn, 'online');
    await this.#touchVisitors([conn]);
    const audience = conn.audience.kind;
    ws.send(JSON.stringify({ type: 'welcome', connection_id: conn.id, audience, heartbeat_seconds: Math.round(this.#options.heartbeatMs / 1000) }));
    if (lastEventId) await this.#replay(conn, lastEventId, joinedAt);
    else this.#flushBacklog(conn);
  }

  /** Before its welcome (and its resume), a socket's frames wait in its backlog. */
  #deliverOrBuffer(conn: Connection, frame: string) {
    if (conn.backlog) conn.backlog.push(frame);
    else this.#send(conn, frame);
  }

  #flushBacklog(conn: Connection) {
    const waiting = conn.backlog ?? [];
    conn.backlog = undefined;
    for (const frame of waiting) this.#send(conn, frame);
  }

  // A visitor with a live widget socket counts as on the site: their last_seen_at stays within the minute.
  async #touchVisitors(connections: Connection[]) {
    const byTenant = new Map<string, string[]>();
    for (const c of connections) {
      if (c.audience.kind === 'visitor') byTenant.set(c.tenantId, [...(byTenant.get(c.tenantId) ?? []), c.audience.visitorId]);
    }
    for (const [tenantId, visitorIds] of byTenant) {
      await this.#deps.database
        .withTenant(tenantId, (trx) => trx.updateTable('visitors').set({ last_seen_at: new Date() }).where('id', 'in', visitorIds).execute())
        .catch((err) => this.#deps.logger.error({ err }, 'visitor last_seen update failed'));
    }
  }

  // Everything after the client's last event up to the position the stream had when the socket joined;
  // what the stream delivered since waits in conn.backlog and follows, so nothing is missed or repeated.
  async #replay(conn: Connection, lastEventId: string, upTo: Position) {
    try {
      const from = await this.#deps.database.withTenant(conn.tenantId, (trx) => positionOfEvent(trx, lastEventId));
      if (!from) {
        this.#send(conn, JSON.stringify({ type: 'resync_required', reason: this.#pastRetention(lastEventId) ? 'past_retention' : 'unknown_event' }));
      } else {
        let after: Position = from;
        for (;;) {
          // Everything up to upTo was below the horizon when the stream reached it: nothing is held back.
          const { rows } = await this.readRaw(conn.tenantId, after, upTo);
          for (const row of rows) {
            const frame = this.#viewFor(conn, row, new Map());
            if (frame) this.#send(conn, frame);
          }
          if (rows.length < BATCH) break;
          after = rows[rows.length - 1]!;
        }
      }
    } finally {
      this.#flushBacklog(conn);
    }
  }

  #pastRetention(eventId: string): boolean {
    // Event ids are UUIDv7: their first 48 bits are the creation time in milliseconds.
    const hex = /^evt_([0-9a-f]{8})-([0-9a-f]{4})/.exec(eventId);
    if (!hex) return false;
    return Date.now() - Number.parseInt(hex[1]! + hex[2]!, 16) > this.#options.retentionMs;
  }

  async #onClose(conn: Connection) {
    clearTimeout(conn.expiryTimer);
    this.#connections.delete(conn);
    const stream = this.#streams.get(conn.tenantId);
    stream?.leave(conn);
    if (stream?.empty) this.#streams.delete(conn.tenantId);
    await this.#announce(conn, undefined);
  }

  // ---- frames from clients ----------------------------------------------------------------------------

  async #onFrame(conn: Connection, raw: string, isBinary: boolean) {
    let frame: { type?: unknown; conversation_id?: unknown; is_typing?: unknown; status?: unknown };
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(raw) as typeof frame;
    } catch {
      conn.ws.close(CLOSE.protocol, 'frames are JSON text');
      return;
    }
    if (frame.type === 'ping') return this.#send(conn, JSON.stringify({ type: 'pong' }));
    if (frame.type === 'presence' && conn.audience.kind === 'member' && (frame.status === 'online' || frame.status === 'away')) {
      conn.status = frame.status;
      return void (await this.#announce(conn, frame.status));
    }
    if (frame.type === 'typing' && typeof frame.conversation_id === 'string' && typeof frame.is_typing === 'boolean') {
      return void (await this.#typing(conn, frame.conversation_id, frame.is_typing));
    }
    conn.ws.close(CLOSE.protocol, 'unknown frame');
  }

  async #typing(conn: Connection, conversationId: string, isTyping: boolean) {
    if (conn.audience.kind === 'integration') return;
    const conversation = await this.#deps.database.withTenant(conn.tenantId, (trx) =>
      trx.selectFrom('conversations').select('visitor_id').where('id', '=', conversationId).executeTakeFirst(),
    );
    const ownsIt = conn.audience.kind === 'member' || conversation?.visitor_id === conn.audience.visitorId;
    if (!conversation || !ownsIt) {
      this.#send(conn, JSON.stringify({ type: 'error', code: 'ERR_NOT_FOUND', detail: 'Conversation not found' }));
      return;
    }
    const base = { conversation_id: conversationId, is_typing: isTyping };
    const fromMember = conn.audience.kind === 'member';
    this.#deps.fanout.live({
      tenantId: conn.tenantId,
      envelope: this.#liveEnvelope(conn.tenantId, 'typing', fromMember ? { ...base, sender_type: 'user', sender_id: (conn.audience as { userId: string }).userId } : { ...base, sender_type: 'visitor' }),
      toMembers: true,
      ...(fromMember && conversation.visitor_id ? { toVisitorId: conversation.visitor_id, visitorData: { ...base, sender_type: 'user' } } : {}),
      exceptConnectionId: conn.id,
    });
  }

  // ---- presence -----------------------------------------------------------------------------------

  /** Records the connection's status (undefined: gone) and tells the team when the presence changed. */
  async #announce(conn: Connection, status: ConnectionStatus | undefined) {
    if (conn.audience.kind === 'integration') return;
    const subject = conn.audience.kind === 'member' ? conn.audience.userId : conn.audience.visitorId;
    const { presence } = this.#deps;
    const { before, after } = status
      ? await presence.set(conn.tenantId, subject, conn.id, status)
      : await presence.remove(conn.tenantId, subject, conn.id);
    if (before === after) return;
    if (conn.audience.kind === 'member') {
      this.#deps.fanout.live({
        tenantId: conn.tenantId,
        envelope: this.#liveEnvelope(conn.tenantId, 'presence.updated', { user_id: subject, presence: after }),
        toMembers: true,
      });
    } else if (before === 'offline' || after === 'offline') {
      this.#deps.fanout.live({
        tenantId: conn.tenantId,
        envelope: this.#liveEnvelope(conn.tenantId, after === 'offline' ? 'visitor.offline' : 'visitor.online', { visitor_id: subject }),
        toMembers: true,
      });
    }
  }

  // Live signals carry no id: they are not stored, so an id would be one that resume cannot find.
  #liveEnvelope(tenantId: string, type: string, data: unknown): LiveSignal['envelope'] {
    return { type, tenant_id: tenantId, created_at: new Date().toISOString(), data };
  }


  #deliverLive(signal: LiveSignal) {
    const stream = this.#streams.get(signal.tenantId);
    if (!stream) return;
    let memberFrame: string | undefined;
    let visitorFrame: string | undefined;
    for (const conn of stream.connections) {
      if (conn.id === signal.exceptConnectionId) continue;
      if (conn.audience.kind === 'visitor') {
        if (signal.toVisitorId !== conn.audience.visitorId) continue;
        visitorFrame ??= JSON.stringify({ ...signal.envelope, data: signal.visitorData ?? signal.envelope.data });
        this.#deliverOrBuffer(conn, visitorFrame);
      } else if (signal.toMembers) {
        memberFrame ??= JSON.stringify(signal.envelope);
        this.#deliverOrBuffer(conn, memberFrame);
      }
    }
  }

  // ---- stored events ------------------------------------------------------------------------------

  #streamOf(tenantId: string): TenantStream {
    let stream = this.#streams.get(tenantId);
    if (!stream) {
      stream = new TenantStream(tenantId, this);
      this.#streams.set(tenantId, stream);
    }
    return stream;
  }

  /** Events after `after` (and up to `upTo`) in feed order, at most BATCH, none a running writer could precede. */
  async readRaw(tenantId: string, after: Position, upTo?: Position): Promise<{ rows: EventRow[]; heldBack: boolean }> {
    const page = await this.#deps.database.withTenant(tenantId, (trx) =>
      readFeed(trx, { tenantId, after, ...(upTo ? { upTo } : {}), limit: BATCH }),
    );
    return page as { rows: EventRow[]; heldBack: boolean };
  }

  /** Where a new stream starts: after the last event no running writer can precede. */
  async head(tenantId: string): Promise<Position> {
    return this.#deps.database.withTenant(tenantId, (trx) => feedHead(trx, tenantId));
  }

  /** Delivers a batch to a stream's sockets: each event serialised once per view. */
  deliver(connections: Iterable<Connection>, rows: EventRow[]) {
    for (const row of rows) {
      const views = new Map<string, string | null>();
      for (const conn of connections) {
        const frame = this.#viewFor(conn, row, views);
        if (frame) this.#deliverOrBuffer(conn, frame);
      }
    }
  }

  #viewFor(conn: Connection, row: EventRow, views: Map<string, string | null>): string | null {
    const key = conn.audience.kind === 'visitor' ? 'visitor' : 'member';
    if (key === 'visitor') {
      const visitorId = (conn.audience as { visitorId: string }).visitorId;
      if (row.visitor_id !== visitorId || row.internal || !VISITOR_EVENT_TYPES.has(row.type)) return null;
    }
    let frame = views.get(key);
    if (frame === undefined) {
      frame = envelopeOf(row, key === 'visitor' ? forVisitor(row) : row.data);
      views.set(key, frame);
    }
    return frame;
  }

  #send(conn: Connection, frame: string) {
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    conn.ws.send(frame);
    if (conn.ws.bufferedAmount > this.#options.maxBufferedBytes) {
      // A client that cannot keep up is let go; it resumes from its last event when it can.
      conn.ws.close(CLOSE.tooSlow, 'too slow');
      setTimeout(() => conn.ws.terminate(), 1000).unref();
    }
  }

  // ---- upkeep ---------------------------------------------------------------------------------------

  async #heartbeat() {
    const refresh: { tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }[] = [];
    const sessions = new Map<string, Connection[]>();
    for (const conn of this.#connections) {
      if (!conn.alive) {
        conn.ws.terminate();
        continue;
      }
      if (conn.expiresAt !== undefined && conn.expiresAt <= Date.now()) {
        conn.ws.close(CLOSE.credentials, 'credential expired');
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
      if (conn.audience.kind === 'integration') continue;
      const subject = conn.audience.kind === 'member' ? conn.audience.userId : conn.audience.visitorId;
      refresh.push({ tenantId: conn.tenantId, subject, connectionId: conn.id, status: conn.status });
      if (conn.audience.kind === 'member') {
        const key = `${conn.tenantId}|${conn.audience.userId}|${conn.audience.sessionId}`;
        sessions.set(key, [...(sessions.get(key) ?? []), conn]);
      }
    }
    await this.#deps.presence.refresh(refresh).catch((err) => this.#deps.logger.error({ err }, 'presence refresh failed'));
    await this.#touchVisitors([...this.#connections]);
    // Logged out, reset or removed from the team since connecting: the socket goes too.
    for (const [key, conns] of sessions) {
      const [tenantId, userId, sessionId] = key.split('|') as [string, string, string];
      const { sessionLive, membership } = await this.#deps.findSession(tenantId, userId, sessionId).catch(() => ({ sessionLive: true, membership: {} as ActiveMembership }));
      if (!sessionLive || !membership) for (const c of conns) c.ws.close(CLOSE.credentials, 'credential revoked');
    }
  }

  async #prune() {
    const cutoff = new Date(Date.now() - this.#options.retentionMs);
    await this.#deps.database
      .asSystem((trx) => trx.deleteFrom('events').where('created_at', '<', cutoff).execute())
      .catch((err) => this.#deps.logger.error({ err }, 'event retention failed'));
  }

  logError(err: unknown, tenantId: string) {
    this.#deps.logger.error({ err, tenant_id: tenantId }, 'event stream failed; retrying');
  }

  /** Checks every connection's session now instead of at the next heartbeat (tests, and after revocations). */
  async checkSessions(): Promise<void> {
    await this.#heartbeat();
  }
}

/** One tenant's connected sockets and its position in the outbox. */
class TenantStream {
  readonly tenantId: string;
  readonly connections = new Set<Connection>();
  readonly #gateway: RealtimeGateway;
  #cursor: Position | undefined;
  #starting: Promise<void> | undefined;
  #running = false;
  #again = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(tenantId: string, gateway: RealtimeGateway) {
    this.tenantId = tenantId;
    this.#gateway = gateway;
  }

  get empty() {
    return this.connections.size === 0;
  }

  /** Adds the socket and answers the stream's position: everything after it reaches the socket live. */
  async join(conn: Connection): Promise<Position> {
    this.#starting ??= this.#gateway.head(this.tenantId).then((head) => {
      this.#cursor = head;
      // News that arrived while the head was read was not pumped: look once now.
      queueMicrotask(() => this.wake());
    });
    await this.#starting;
    this.connections.add(conn);
    return { ...this.#cursor! };
  }

  leave(conn: Connection) {
    this.connections.delete(conn);
    if (this.empty) clearTimeout(this.#retry);
  }

  wake() {
    if (!this.#cursor) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    void this.#pump();
  }

  async #pump() {
    this.#running = true;
    try {
      do {
        this.#again = false;
        const { rows: ready, heldBack } = await this.#gateway.readRaw(this.tenantId, this.#cursor!);
        if (ready.length > 0) {
          this.#gateway.deliver(this.connections, ready);
          const last = ready[ready.length - 1]!;
          this.#cursor = { txid: last.txid, position: last.position };
        }
        if (ready.length === BATCH) this.#again = true;
        // Committed events held back by an event writer still running: look again shortly.
        if (heldBack && !this.empty) {
          clearTimeout(this.#retry);
          this.#retry = setTimeout(() => this.wake(), 25);
        }
      } while (this.#again && !this.empty);
    } catch (err) {
      this.#gateway.logError(err, this.tenantId);
      clearTimeout(this.#retry);
      if (!this.empty) this.#retry = setTimeout(() => this.wake(), 250);
    } finally {
      this.#running = false;
    }
  }
}

function refuse(socket: Duplex, error: AppError) {
  const status = statusOf(error.code);
  const body = JSON.stringify(problemBody(error, randomUUID()));
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : status === 404 ? 'Not Found' : 'Error'}\r\n` +
      `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
