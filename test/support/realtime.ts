import { createServer, type Server } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Express } from 'express';
import { openRedis, type RedisLink } from '../../src/redis/link.ts';
import { WebSocket } from 'ws';
import { type AppDeps, buildApp, type Services } from '../../src/app.ts';
import type { Database } from '../../src/db/database.ts';
import { EventBus } from '../../src/events/bus.ts';
import { loadContract } from '../../src/http/contract.ts';
import { type Fanout, LocalFanout, RedisFanout } from '../../src/realtime/fanout.ts';
import { type GatewayOptions, RealtimeGateway } from '../../src/realtime/gateway.ts';
import { MemoryPresenceTracker, type PresenceTracker, RedisPresenceTracker } from '../../src/realtime/presence-tracker.ts';
import { MemoryTicketStore, RedisTicketStore, type TicketStore } from '../../src/realtime/tickets.ts';
import { eventually } from './eventually.ts';
import { getHarness } from './harness.ts';

export interface RealtimeServer {
  app: Express;
  services: Services;
  gateway: RealtimeGateway;
  /** The bus the app publishes on: `wantsHandoff(tenant)` says whether the gateway holds a stream for it. */
  bus: EventBus;
  /** The HTTP server (the browser tests cut its visitor sockets). */
  server: Server;
  wsUrl: string;
  close(): Promise<void>;
}

/** An app and its gateway on a real HTTP server, on the run's database. With redisUrl, shared through Redis. */
export async function startRealtime(
  options: {
    redisUrl?: string;
    gateway?: Partial<GatewayOptions>;
    database?: Database;
    /** The gateway's own database, when a test watches what the streams ask of it. */
    streamDatabase?: Database;
    config?: Partial<AppDeps['config']>;
    /** Replaces the in-memory presence tracker (without redisUrl). */
    presence?: PresenceTracker;
    /** Replaces the harness's in-memory mailer (the app's setup test reads mail from files). */
    mailer?: AppDeps['mailer'];
    /** A port known beforehand (APP_URL, which mail links use, names it); 0 by default. */
    port?: number;
    /** Billing's Stripe client (with config.billing naming its keys): test/support/fake-stripe.ts's. */
    stripe?: AppDeps['stripe'];
  } = {},
): Promise<RealtimeServer> {
  const h = await getHarness();
  const database = options.database ?? h.database;
  let redis: RedisLink | undefined;
  let presence: PresenceTracker = options.presence ?? new MemoryPresenceTracker();
  let tickets: TicketStore = new MemoryTicketStore();
  let fanout: Fanout = new LocalFanout();
  if (options.redisUrl) {
    redis = await openRedis(options.redisUrl, { timeoutMs: 5_000, onError: () => undefined });
    presence = new RedisPresenceTracker(redis);
    tickets = new RedisTicketStore(redis);
    fanout = await RedisFanout.create(redis, { pollMs: 250 });
  }
  const bus = new EventBus();
  const config = { ...h.deps.config, ...options.config };
  const { app, services } = buildApp({ ...h.deps, ...(options.mailer ? { mailer: options.mailer } : {}), ...(options.stripe ? { stripe: options.stripe } : {}), config, database, bus, presence, tickets });
  const server: Server = createServer(app);
  const gateway = new RealtimeGateway({
    database: options.streamDatabase ?? database,
    bus,
    fanout,
    tokens: h.deps.tokens,
    tickets,
    presence,
    findSession: (tenantId, userId, sessionId) => services.tenants.findSession(tenantId, userId, sessionId),
    sessionChanges: services.sessions,
    findApiKey: (key) => services.apiKeys.authenticate(key),
    apiKeyLive: (keyHash) => services.apiKeys.isLive(keyHash),
    authenticateVisitor: (token, origin) => services.widgetPublic.authenticate(token, origin),
    logger: h.deps.logger,
    options: options.gateway ?? {},
  });
  gateway.attach(server);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    app,
    services,
    gateway,
    bus,
    server,
    wsUrl: `ws://127.0.0.1:${port}/api/v1/ws`,
    close: async () => {
      await gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis?.close();
    },
  };
}

export interface Client {
  ws: WebSocket;
  frames: Record<string, any>[];
  /** The first frame (from `from` on) that matches, waiting up to 5 s. */
  next(match: (f: Record<string, any>) => boolean, from?: number): Promise<Record<string, any>>;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export function connect(url: string, headers: Record<string, string> = {}, options: { autoPong?: boolean } = {}): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, autoPong: options.autoPong ?? true });
    const frames: Record<string, any>[] = [];
    const waiters: (() => void)[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
    ws.on('message', (raw) => {
      frames.push(JSON.parse(raw.toString()));
      for (const w of waiters.splice(0)) w();
    });
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
    const client: Client = {
      ws,
      frames,
      closed,
      close: () => ws.close(),
      next(match, from = 0) {
        return eventually(() => frames.slice(from).find(match), () => `a matching frame; got: ${frames.map((f) => f.type).join(', ')}`, {
          timeoutMs: 5000,
          wake: (wakeUp) => waiters.push(wakeUp),
        });
      },
    };
    // Resolved once the welcome frame is in: the socket has joined its tenant's stream.
    ws.once('open', () => void client.next((f) => f.type === 'welcome').then(() => resolve(client), reject));
  });
}

// ---- the contract, as a validator for what arrives -------------------------------------------------

const document = loadContract().document;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema({ $id: 'chat', components: document.components });
const PAYLOADS: Record<string, string> = {
  'conversation.created': 'ConversationCreatedData',
  'conversation.updated': 'ConversationUpdatedData',
  'conversation.assigned': 'ConversationAssignedData',
  'conversation.transferred': 'ConversationTransferredData',
  'conversation.closed': 'ConversationClosedData',
  'conversation.reopened': 'ConversationReopenedData',
  'message.created': 'MessageCreatedData',
  'message.read': 'MessageReadData',
  'presence.updated': 'PresenceUpdatedData',
  typing: 'TypingData',
  'visitor.online': 'VisitorPresenceData',
  'visitor.offline': 'VisitorPresenceData',
  'csat.submitted': 'CsatSubmittedData',
};
export const EVENT_TYPES = Object.keys(PAYLOADS);
/** Live signals: delivered, never stored, and without an id (nothing to resume from). */
export const LIVE_TYPES = ['presence.updated', 'typing', 'visitor.online', 'visitor.offline'];

/** Errors of an event frame against the contract: its variant of SocketEvent (Event when stored), and the payload its type names. */
export function contractErrors(frame: Record<string, any>): string[] {
  const live = LIVE_TYPES.includes(frame.type);
  const envelope = ajv.getSchema(`chat#/components/schemas/${live ? 'SocketEvent' : 'Event'}`)!;
  const payloadName = PAYLOADS[frame.type];
  if (!payloadName) return [`unknown event type ${frame.type}`];
  const payload = ajv.getSchema(`chat#/components/schemas/${payloadName}`)!;
  const errors: string[] = [];
  if (live && 'id' in frame) errors.push('a live signal carries an id');
  if (!envelope(frame)) errors.push(...(envelope.errors ?? []).map((e) => `envelope ${e.instancePath} ${e.message}`));
  if (!payload(frame.data)) errors.push(...(payload.errors ?? []).map((e) => `data ${e.instancePath} ${e.message}`));
  return errors;
}
