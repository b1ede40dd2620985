import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import { touchVisitors } from '../visitors/visitor.service.ts';
import { checkMember, type CredentialDeps } from './credentials.ts';
import { CLOSE, type Connection, subjectOf } from './connection.ts';
import type { ConnectionStatus, PresenceTracker } from './presence-tracker.ts';

export interface UpkeepContext {
  database: Database;
  presence: PresenceTracker;
  findSession: CredentialDeps['findSession'];
  apiKeyLive: CredentialDeps['apiKeyLive'];
  logger: Logger;
}

// Appends in place: a copy per socket made each heartbeat quadratic in the sockets of one login or one
// tenant's visitors (10,000 sockets of one login: 50 million element copies, every 30 seconds).
function pushTo<K, V>(groups: Map<K, V[]>, key: K, value: V): void {
  const group = groups.get(key);
  if (group) group.push(value);
  else groups.set(key, [value]);
}

/** Sockets pinged at each turn of the event loop during a heartbeat. */
const HEARTBEAT_SLICE = 1000;

/** setTimeout's limit: a longer delay overflows and fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Closes the socket when its credential expires; credentials that outlive a timer are checked at heartbeats. */
export function armExpiry(conn: Connection): void {
  const untilExpiry = conn.expiresAt ? conn.expiresAt - Date.now() : undefined;
  if (untilExpiry !== undefined && untilExpiry <= MAX_TIMER_MS) {
    conn.expiryTimer = setTimeout(() => conn.ws.close(CLOSE.credentials, 'credential expired'), Math.max(0, untilExpiry));
  }
}

// A visitor with a live widget socket counts as on the site: their last_seen_at stays within the minute.
export async function markVisitorsSeen(ctx: UpkeepContext, connections: Iterable<Connection>): Promise<void> {
  const byTenant = new Map<string, string[]>();
  for (const c of connections) {
    if (c.audience.kind === 'visitor') pushTo(byTenant, c.tenantId, c.audience.visitorId);
  }
  const now = new Date();
  for (const [tenantId, visitorIds] of byTenant) {
    await ctx.database
      .withTenant(tenantId, (trx) => touchVisitors(trx, visitorIds, now))
      .catch((err) => ctx.logger.error({ err }, 'visitor last_seen update failed'));
  }
}

/**
 * Every heartbeat: drops sockets that did not answer the last ping or whose credential expired, pings the
 * rest, keeps presence and visitors fresh, and closes the sockets of logins that ended since they connected.
 */
export async function heartbeat(ctx: UpkeepContext, connections: ReadonlySet<Connection>): Promise<void> {
  const kept: Connection[] = [];
  let visited = 0;
  for (const conn of [...connections]) {
    // The pings in slices, the event loop free between them: tens of thousands of sockets pinged in one
    // go would hold an event's fan-out arriving meanwhile for the whole of it (bench:sockets, p99).
    if (++visited % HEARTBEAT_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    // Closed while an earlier slice waited.
    if (!connections.has(conn)) continue;
    if (!conn.alive) {
      conn.ws.terminate();
      continue;
    }
    if (conn.expiresAt !== undefined && conn.expiresAt <= Date.now()) {
      conn.ws.close(CLOSE.credentials, 'credential expired');
      continue;
    }
    kept.push(conn);
    conn.alive = false;
    conn.ws.ping();
  }
  // Taken in one go after the last slice, of the sockets still open: a socket that closed between slices
  // is not written back to presence after its removal.
  const refresh: { tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }[] = [];
  const sessions = new Map<string, Connection[]>();
  const keyed: Connection[] = [];
  for (const conn of kept) {
    if (!connections.has(conn)) continue;
    const subject = subjectOf(conn);
    if (subject !== undefined) refresh.push({ tenantId: conn.tenantId, subject, connectionId: conn.id, status: conn.status });
    if (conn.audience.kind === 'member') {
      pushTo(sessions, `${conn.tenantId}|${conn.audience.userId}|${conn.audience.sessionId}`, conn);
    }
    if (conn.audience.kind === 'integration') keyed.push(conn);
  }
  await ctx.presence.refresh(refresh).catch((err) => ctx.logger.error({ err }, 'presence refresh failed'));
  // Only the sockets kept: a visitor whose socket was just dropped is not seen now.
  await markVisitorsSeen(ctx, kept);
  await recheckSessions(ctx, sessions);
  // A revocation told to every instance closes these at once; this is the backstop for a lost notice.
  await recheckApiKeys(ctx, keyed);
}

/** Closes the sockets opened with an API key value that no longer works (revoked, or rotated away). */
export async function recheckApiKeys(ctx: UpkeepContext, connections: Connection[]): Promise<void> {
  const byHash = new Map<string, { hash: Buffer; conns: Connection[] }>();
  for (const conn of connections) {
    if (conn.audience.kind !== 'integration') continue;
    const key = conn.audience.keyHash.toString('hex');
    const group = byHash.get(key) ?? byHash.set(key, { hash: conn.audience.keyHash, conns: [] }).get(key)!;
    group.conns.push(conn);
  }
  for (const { hash, conns } of byHash.values()) {
    // As for logins, only a definite answer closes sockets; a database that is away is not a revocation.
    const live = await ctx.apiKeyLive(hash).catch(() => true);
    if (!live) for (const c of conns) c.ws.close(CLOSE.credentials, 'credential revoked');
  }
}

/** Closes the sockets of these members whose login ended or who left the team. */
export async function recheckMembers(ctx: UpkeepContext, connections: Connection[]): Promise<void> {
  const sessions = new Map<string, Connection[]>();
  for (const conn of connections) {
    if (conn.audience.kind !== 'member') continue;
    pushTo(sessions, `${conn.tenantId}|${conn.audience.userId}|${conn.audience.sessionId}`, conn);
  }
  await recheckSessions(ctx, sessions);
}

async function recheckSessions(ctx: UpkeepContext, sessions: Map<string, Connection[]>): Promise<void> {
  for (const [key, conns] of sessions) {
    const [tenantId, userId, sessionId] = key.split('|') as [string, string, string];
    try {
      await checkMember(ctx, tenantId, userId, sessionId);
    } catch (err) {
      // Only a definite answer closes sockets; a database that is away is not a revocation.
      if ((err as { code?: string }).code === 'ERR_UNAUTHENTICATED' || (err as { code?: string }).code === 'ERR_FORBIDDEN') {
        for (const c of conns) c.ws.close(CLOSE.credentials, 'credential revoked');
      }
    }
  }
}
