import type { Principal } from '../http/access.ts';
import { AppError } from './errors.ts';

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
