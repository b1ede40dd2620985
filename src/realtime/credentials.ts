import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { hashOpaqueToken, type TokenService } from '../auth/tokens.ts';
import type { ActiveMembership } from '../shared/principal.ts';
import { problemBody, statusOf } from '../http/problem.ts';
import { AppError } from '../shared/errors.ts';
import type { Audience } from './connection.ts';
import type { TicketStore } from './tickets.ts';

export interface CredentialDeps {
  tokens: TokenService;
  tickets: TicketStore;
  findSession(tenantId: string, userId: string, sessionId: string): Promise<{ sessionLive: boolean; membership: ActiveMembership | undefined }>;
  findApiKey(key: string): Promise<{ keyId: string; tenantId: string; scopes: string[] } | undefined>;
  /** Whether the API key with this hash still works (revoked and rotated-away values do not). */
  apiKeyLive(keyHash: Buffer): Promise<boolean>;
  /** A visitor socket's widget rules (domains for the Origin, identity), as for widget calls. */
  authenticateVisitor?: (token: string, origin: string | undefined) => Promise<unknown>;
}

export interface UpgradeIdentity {
  tenantId: string;
  audience: Audience;
  expiresAt?: number;
}

/** Who is connecting, from the upgrade request alone: visitor token, ticket, bearer token or API key. */
export async function authenticateUpgrade(deps: CredentialDeps, req: IncomingMessage, url: URL): Promise<UpgradeIdentity> {
  const { tokens } = deps;
  const authorization = req.headers.authorization;
  const bearer = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined;
  const visitorToken = url.searchParams.get('visitor_token') ?? (bearer && tokens.isVisitorToken(bearer) ? bearer : undefined);
  if (visitorToken) {
    const claims = tokens.verifyVisitorToken(visitorToken);
    // Sessions from the widget name their widget: its domains and identity rule hold here too.
    if (claims.widgetId && deps.authenticateVisitor) await deps.authenticateVisitor(visitorToken, req.headers.origin);
    return { tenantId: claims.tenantId, audience: { kind: 'visitor', visitorId: claims.visitorId }, expiresAt: claims.expiresAt };
  }
  const ticket = url.searchParams.get('ticket');
  if (ticket) {
    const data = await deps.tickets.consume(ticket);
    if (!data) throw new AppError('ERR_UNAUTHENTICATED', 'The ticket is unknown, used or expired');
    await checkMember(deps, data.tenantId, data.userId, data.sessionId);
    return { tenantId: data.tenantId, audience: { kind: 'member', userId: data.userId, sessionId: data.sessionId } };
  }
  if (bearer) {
    const claims = tokens.verifyAccessToken(bearer);
    const header = req.headers['x-tenant-id'];
    const tenantId = typeof header === 'string' ? header : claims.tenantId;
    await checkMember(deps, tenantId, claims.userId, claims.sessionId);
    const expiresAt = tokens.expiryOf(bearer);
    return { tenantId, audience: { kind: 'member', userId: claims.userId, sessionId: claims.sessionId }, ...(expiresAt ? { expiresAt } : {}) };
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') {
    const tenantHeader = req.headers['x-tenant-id'];
    const key = await deps.findApiKey(apiKey);
    if (!key || typeof tenantHeader !== 'string') throw new AppError('ERR_UNAUTHENTICATED', 'Send a valid API key with X-Tenant-ID');
    if (key.tenantId !== tenantHeader) throw new AppError('ERR_FORBIDDEN', 'The API key does not belong to the tenant in X-Tenant-ID');
    if (!key.scopes.includes('conversations:read')) throw new AppError('ERR_FORBIDDEN', 'The API key lacks the scope conversations:read');
    return { tenantId: key.tenantId, audience: { kind: 'integration', keyId: key.keyId, keyHash: hashOpaqueToken(apiKey) } };
  }
  throw new AppError('ERR_UNAUTHENTICATED', 'Authenticate the upgrade: Authorization, X-API-Key with X-Tenant-ID, ?ticket= or ?visitor_token=');
}

/** A member's login is live and their membership active (at connect, and again at each heartbeat). */
export async function checkMember(deps: Pick<CredentialDeps, 'findSession'>, tenantId: string, userId: string, sessionId: string): Promise<void> {
  const { sessionLive, membership } = await deps.findSession(tenantId, userId, sessionId);
  if (!sessionLive) throw new AppError('ERR_UNAUTHENTICATED', 'The login has ended: log in again');
  if (!membership) throw new AppError('ERR_FORBIDDEN', 'You are not an active member of this tenant');
}

const REASONS: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' };

/** Refuses an upgrade with a problem+json HTTP answer: no WebSocket is ever opened. */
export function refuseUpgrade(socket: Duplex, error: AppError): void {
  const status = statusOf(error.code);
  const body = JSON.stringify(problemBody(error, randomUUID()));
  // Retry-After of a 503 (a dependency away) tells the client when to try again, as over HTTP.
  const headers = Object.entries(error.headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n${headers}` +
      `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
