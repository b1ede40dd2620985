import type { RequestHandler } from 'express';
import { AppError, forbidden, unauthenticated } from '../shared/errors.ts';
import type { ActiveMembership, Role, Seat, VisitorPrincipal } from '../shared/principal.ts';
import { TENANT_ID } from '../shared/ids.ts';

// The caller's identity lives in shared/ (services use it); the middleware that establishes it lives here.
export type { ActiveMembership, Principal, Role, Seat, VisitorPrincipal } from '../shared/principal.ts';

/** What the access middleware needs from the rest of the app. */
export interface AccessDeps {
  /** Verifies an access token (src/auth/tokens.ts): throws AppError when it is not valid. */
  tokens: { verifyAccessToken(token: string): { userId: string; tenantId: string; sessionId: string } };
  /** Whether the login is live, and the role and seat in the tenant if the membership there is active. */
  findSession(tenantId: string, userId: string, sessionId: string): Promise<{ sessionLive: boolean; membership: ActiveMembership | undefined }>;
  /** Resolves an API key to its tenant and scopes; undefined when unknown or revoked. */
  findApiKey(key: string): Promise<{ keyId: string; tenantId: string; scopes: string[]; botId?: string } | undefined>;
  /** A visitor's token, checked against its widget's domains (for this Origin) and identity rule. */
  authenticateVisitor(token: string, origin: string | undefined): Promise<VisitorPrincipal>;
}

type SecurityRequirement = Record<string, string[]>;

/** The `x-access` extension of an operation: who among a tenant's members may call it. */
interface AccessRule {
  roles?: Role[];
  seat?: Seat;
}

// Authenticates the caller and enforces what the operation's `security` and `x-access` declare.
// It runs where express-openapi-validator would check security: after the route is matched
// (req.openapi) and before the request is validated, so 401 and 403 come before 400.
export function accessMiddleware(deps: AccessDeps): RequestHandler {
  return async (req, res, next) => {
    const operation = (req as { openapi?: { schema?: Record<string, unknown> } }).openapi?.schema;
    if (!operation) return next();
    const security = (operation.security as SecurityRequirement[] | undefined) ?? [];
    if (security.length === 0 || security.some((r) => Object.keys(r).length === 0)) return next();

    const bearerAllowed = security.some((r) => 'bearerAuth' in r);
    const visitorAllowed = security.some((r) => 'visitorAuth' in r);
    const apiKeyRequirements = security.filter((r) => 'apiKeyAuth' in r);
    const apiKeyRequirement = apiKeyRequirements[0];
    const authorization = req.get('authorization');
    const apiKey = req.get('x-api-key');
    const tenantHeader = req.get('x-tenant-id');
    if (tenantHeader !== undefined && !TENANT_ID.test(tenantHeader)) {
      throw new AppError('ERR_VALIDATION', 'X-Tenant-ID is not a tenant identifier', {
        fieldErrors: [{ path: '/headers/x-tenant-id', message: 'must be tn_ followed by a UUIDv7' }],
      });
    }

    if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!match?.[1]) throw unauthenticated('The Authorization header must be "Bearer <access token>"');
      if (visitorAllowed) {
        const origin = req.get('origin');
        res.locals.principal = await deps.authenticateVisitor(match[1], origin);
        // The widget allows this origin: the browser may read the answer.
        res.setHeader('Access-Control-Allow-Origin', origin!);
        res.setHeader('Vary', 'Origin');
        return next();
      }
      if (!bearerAllowed) throw forbidden('This operation does not accept user tokens');
      const claims = deps.tokens.verifyAccessToken(match[1]);
      const tenantId = tenantHeader ?? claims.tenantId;
      const { sessionLive, membership } = await deps.findSession(tenantId, claims.userId, claims.sessionId);
      if (!sessionLive) throw unauthenticated('The login has ended (logged out, or the password was reset): log in again');
      if (!membership) throw forbidden('You are not an active member of this tenant');
      res.locals.principal = { kind: 'user', userId: claims.userId, tenantId, sessionId: claims.sessionId, ...membership };
      enforceAccessRule(operation['x-access'] as AccessRule | undefined, membership);
      return next();
    }

    if (apiKey !== undefined) {
      if (!apiKeyRequirement && visitorAllowed) throw forbidden('This operation is for visitors: send a visitor token');
      if (!apiKeyRequirement) {
        throw new AppError('ERR_USER_TOKEN_REQUIRED', 'This operation needs a user access token; API keys are not accepted');
      }
      if (tenantHeader === undefined) throw unauthenticated('X-Tenant-ID is required with an API key');
      const key = await deps.findApiKey(apiKey);
      if (!key) throw unauthenticated('The API key is not valid');
      // Another tenant's id next to a valid key: refused without saying whether that tenant exists.
      if (key.tenantId !== tenantHeader) throw forbidden('The API key does not belong to the tenant in X-Tenant-ID');
      // Any one of the operation's API-key requirements will do (an integration's scopes, or a bot's `bot`).
      const satisfied = apiKeyRequirements.some((r) => (r.apiKeyAuth ?? []).every((scope) => key.scopes.includes(scope)));
      if (!satisfied) {
        const missing = (apiKeyRequirement.apiKeyAuth ?? []).filter((scope) => !key.scopes.includes(scope));
        throw forbidden(key.botId ? 'A bot\'s key cannot do this' : `The API key lacks the scope ${missing.join(', ')}`);
      }
      res.locals.principal = { kind: 'api_key', keyId: key.keyId, tenantId: key.tenantId, scopes: key.scopes, ...(key.botId ? { botId: key.botId } : {}) };
      return next();
    }

    throw unauthenticated(
      visitorAllowed
        ? 'Send the visitor token (Authorization: Bearer ...) from POST /v1/widget/sessions'
        : bearerAllowed
          ? 'Send an access token (Authorization: Bearer ...) or an API key'
          : 'Send an API key with X-Tenant-ID',
    );
  };
}

function enforceAccessRule(rule: AccessRule | undefined, membership: ActiveMembership): void {
  if (!rule) return;
  if (rule.roles && !rule.roles.includes(membership.role)) {
    throw forbidden(`This operation needs the role ${rule.roles.join(' or ')}`);
  }
  if (rule.seat === 'full' && membership.seat !== 'full') {
    throw new AppError('ERR_LITE_SEAT', 'A lite seat cannot do this; it needs a full seat');
  }
}
