import { AppError } from './errors.ts';

export type Role = 'owner' | 'admin' | 'agent';
export type Seat = 'full' | 'lite';

/** Who is calling: a member (user token), an integration (API key) or a website visitor (visitor token). */
export type Principal =
  | { kind: 'user'; userId: string; tenantId: string; role: Role; seat: Seat; sessionId: string }
  | { kind: 'api_key'; keyId: string; tenantId: string; scopes: string[]; /** A bot's own key (scope `bot`): it acts as that bot. */ botId?: string }
  | { kind: 'visitor'; visitorId: string; tenantId: string; widgetId: string; contactId: string | null };

export type VisitorPrincipal = Extract<Principal, { kind: 'visitor' }>;

export interface ActiveMembership {
  role: Role;
  seat: Seat;
}

export type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/** The calling user. Operations that only accept user tokens say so in the contract; this guards it. */
export function requireUser(principal: Principal | undefined): UserPrincipal {
  if (principal?.kind !== 'user') {
    throw new AppError('ERR_USER_TOKEN_REQUIRED', 'This operation needs a user access token; API keys are not accepted');
  }
  return principal;
}

export function requirePrincipal(principal: Principal | undefined): Principal {
  if (!principal) throw new AppError('ERR_UNAUTHENTICATED', 'Authentication is required');
  return principal;
}
