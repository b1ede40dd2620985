import type { Logger } from 'pino';
import type { SessionCache } from './session-cache.ts';
import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { MailTokenPurpose, User } from '../db/schema.ts';
import type { Mailer } from '../mail/mailer.ts';
import { passwordResetMail, verificationMail } from '../mail/templates.ts';
import { AppError, conflict, forbidden, invalidInput, unauthenticated } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { invalidTimeZone, isValidTimeZone } from '../shared/timezones.ts';
import * as repo from './auth.repository.ts';
import type { PasswordHasher } from './password.ts';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_MS, type TokenService, hashOpaqueToken, newOpaqueToken } from './tokens.ts';

type Schemas = components['schemas'];
type TokenPair = Schemas['TokenPair'];

/** Within this window a rotated refresh token presented again is a race (two tabs), not a theft. */
export const REFRESH_REUSE_GRACE_MS = 10_000;
export const VERIFY_EMAIL_TTL_MS = 24 * 3600 * 1000;
export const RESET_PASSWORD_TTL_MS = 3600 * 1000;

const toUserDto = (u: User): Schemas['User'] => ({
  id: u.id,
  email: u.email,
  name: u.name,
  email_verified: u.email_verified_at !== null,
  created_at: u.created_at.toISOString(),
});

const invalidRefreshToken = () =>
  new AppError('ERR_INVALID_REFRESH_TOKEN', 'The refresh token is unknown, expired, already used or revoked: log in again');
const invalidMailToken = () => new AppError('ERR_INVALID_TOKEN', 'The link is invalid, has expired or was already used');

export interface AuthDeps {
  database: Database;
  passwords: PasswordHasher;
  tokens: TokenService;
  mailer: Mailer;
  appUrl: string;
  logger: Logger;
  /** Told when a login ends, so that no instance keeps treating it as live. */
  sessions?: SessionCache;
  now?: () => Date;
  /**
   * Creates the tenant a registration starts, with the new user as its owner, in the registration's
   * transaction. The tenants feature provides it (app.ts): it sits above auth, whose logins it manages.
   */
  createTenant: (trx: Tx, tenant: { name: string; timezone: string; ownerId: string }) => Promise<Schemas['Tenant']>;
}

/** The user's role and seat in the tenant if their membership there is active (the login's and the services' check). */
export const activeMembership = (trx: Tx, tenantId: string, userId: string) => repo.findActiveMembership(trx, tenantId, userId);
/** The person with this address, if any (system role). */
export const findUserByEmail = (trx: Tx, email: string) => repo.findUserByEmail(trx, email);
/** A person invited without an account yet: no password until they accept. */
export const insertInvitedUser = (trx: Tx, user: { id: string; email: string; name: string }) => repo.insertUser(trx, { ...user, password_hash: null });
/** The token of an invitation's mail link, accepted by acceptInvitation. */
export const insertInvitationToken = (trx: Tx, t: { userId: string; tenantId: string; hash: Buffer; expiresAt: Date }) =>
  repo.insertMailToken(trx, { id: newId('session'), purpose: 'invitation', user_id: t.userId, tenant_id: t.tenantId, token_hash: t.hash, expires_at: t.expiresAt });
/** Whether the login is live, with the role and seat of an active membership (the access middleware's question). */
export const findSession = (trx: Tx, tenantId: string, userId: string, sessionId: string) => repo.findSession(trx, tenantId, userId, sessionId);
/** Ends every login of the user (in one tenant when given): a removed member is out at once. */
export const revokeUserLogins = (trx: Tx, userId: string, now: Date, tenantId?: string) => repo.revokeUserFamilies(trx, userId, now, tenantId);

export class AuthService {
  readonly #db: Database;
  readonly #passwords: PasswordHasher;
  readonly #createTenant: AuthDeps['createTenant'];
  readonly #tokens: TokenService;
  readonly #mailer: Mailer;
  readonly #appUrl: string;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #sessions: SessionCache | undefined;

  constructor(deps: AuthDeps) {
    this.#db = deps.database;
    this.#passwords = deps.passwords;
    this.#tokens = deps.tokens;
    this.#mailer = deps.mailer;
    this.#appUrl = deps.appUrl;
    this.#logger = deps.logger;
    this.#now = deps.now ?? (() => new Date());
    this.#sessions = deps.sessions;
    this.#createTenant = deps.createTenant;
  }

  async register(input: Schemas['RegisterRequest']): Promise<Schemas['RegisterResponse']> {
    const timezone = input.timezone ?? 'UTC';
    if (!isValidTimeZone(timezone)) throw invalidTimeZone();
    const passwordHash = await this.#passwords.hash(input.password);
    const verification = newOpaqueToken();
    const result = await this.#db
      .asSystem(async (trx) => {
        const user = await repo.insertUser(trx, { id: newId('user'), email: input.email, name: input.name, password_hash: passwordHash });
        const tenant = await this.#createTenant(trx, { name: input.tenant_name ?? input.name, timezone, ownerId: user.id });
        await this.#issueMailToken(trx, 'verify_email', user.id, null, verification.hash, VERIFY_EMAIL_TTL_MS);
        const tokens = await this.#startSession(trx, user.id, tenant.id);
        return { ...tokens, user: toUserDto(user), tenant };
      })
      .catch((err) => {
        if (isUniqueViolation(err, 'users_email_key')) throw conflict('The e-mail address is already registered');
        throw err;
      });
    this.#sendLater(verificationMail(input.email, `${this.#appUrl}/verify-email?token=${verification.token}`));
    return result;
  }

  async login(input: Schemas['LoginRequest']): Promise<TokenPair> {
    const user = await this.#db.asSystem((trx) => repo.findUserByEmail(trx, input.email));
    const passwordOk = user?.password_hash
      ? await this.#passwords.verify(input.password, user.password_hash)
      : await this.#passwords.verifyAgainstNothing(input.password);
    if (!user || !passwordOk) throw unauthenticated('The e-mail address or the password is wrong');
    return this.#db.asSystem(async (trx) => {
      const tenantId = input.tenant_id
        ? (await repo.findActiveMembership(trx, input.tenant_id, user.id)) && input.tenant_id
        : await repo.findFirstActiveTenantOfUser(trx, user.id);
      if (!tenantId) {
        throw forbidden(input.tenant_id ? 'You are not an active member of this tenant' : 'You are not an active member of any tenant');
      }
      return this.#startSession(trx, user.id, tenantId);
    });
  }

  async refresh(refreshToken: string): Promise<TokenPair> {
    const now = this.#now();
    // The outcome is returned, not thrown, so that revoking a stolen family commits.
    let revoked: string | undefined;
    const outcome = await this.#db.asSystem(async (trx): Promise<TokenPair | AppError> => {
      const token = await repo.findRefreshTokenByHash(trx, hashOpaqueToken(refreshToken));
      if (!token || token.revoked_at || token.expires_at <= now) return invalidRefreshToken();
      if (token.rotated_at) {
        if (now.getTime() - token.rotated_at.getTime() > REFRESH_REUSE_GRACE_MS) {
          await repo.revokeFamily(trx, token.family_id, now);
          revoked = token.family_id;
          this.#logger.warn({ family_id: token.family_id, user_id: token.user_id }, 'refresh token reused: login revoked');
        }
        return invalidRefreshToken();
      }
      if (!(await repo.claimRefreshToken(trx, token.id, now))) return invalidRefreshToken();
      if (!(await repo.findActiveMembership(trx, token.tenant_id, token.user_id))) {
        await repo.revokeFamily(trx, token.family_id, now);
        revoked = token.family_id;
        return forbidden('You are no longer an active member of this tenant');
      }
      return this.#continueSession(trx, token.user_id, token.tenant_id, token.family_id);
    });
    if (revoked) this.#sessions?.changed({ sessionId: revoked });
    if (outcome instanceof AppError) throw outcome;
    return outcome;
  }

  async logout(refreshToken: string): Promise<{ logged_out: true }> {
    const familyId = await this.#db.asSystem(async (trx) => {
      const token = await repo.findRefreshTokenByHash(trx, hashOpaqueToken(refreshToken));
      if (token) await repo.revokeFamily(trx, token.family_id, this.#now());
      return token?.family_id;
    });
    if (familyId) this.#sessions?.changed({ sessionId: familyId });
    return { logged_out: true };
  }

  async verifyEmail(token: string): Promise<Schemas['VerifyEmailResult']> {
    return this.#db.asSystem(async (trx) => {
      const row = await this.#useMailToken(trx, token, 'verify_email');
      await repo.updateUser(trx, row.user_id, { email_verified_at: this.#now() });
      return { user_id: row.user_id, email_verified: true as const };
    });
  }

  async forgotPassword(email: string): Promise<{ accepted: true }> {
    const reset = newOpaqueToken();
    const user = await this.#db.asSystem(async (trx) => {
      const found = await repo.findUserByEmail(trx, email);
      if (found) await this.#issueMailToken(trx, 'reset_password', found.id, null, reset.hash, RESET_PASSWORD_TTL_MS);
      return found;
    });
    if (user) this.#sendLater(passwordResetMail(user.email, `${this.#appUrl}/reset-password?token=${reset.token}`));
    return { accepted: true };
  }

  async resetPassword(input: Schemas['ResetPasswordRequest']): Promise<{ password_reset: true }> {
    const passwordHash = await this.#passwords.hash(input.password);
    const userId = await this.#db.asSystem(async (trx) => {
      const row = await this.#useMailToken(trx, input.token, 'reset_password');
      const now = this.#now();
      // Whoever holds the mailbox holds the account: the address counts as verified from here on.
      const user = await repo.findUser(trx, row.user_id);
      await repo.updateUser(trx, row.user_id, { password_hash: passwordHash, ...(user?.email_verified_at ? {} : { email_verified_at: now }) });
      await repo.revokeUserFamilies(trx, row.user_id, now);
      return row.user_id;
    });
    this.#sessions?.changed({ userId });
    return { password_reset: true };
  }

  async acceptInvitation(input: Schemas['AcceptInvitationRequest']): Promise<TokenPair> {
    const passwordHash = input.password ? await this.#passwords.hash(input.password) : undefined;
    return this.#db.asSystem(async (trx) => {
      const row = await this.#useMailToken(trx, input.token, 'invitation');
      const user = await repo.findUser(trx, row.user_id);
      if (!user || !row.tenant_id) throw invalidMailToken();
      if (!user.password_hash) {
        const missing = [
          ...(input.name ? [] : [{ field: 'name', message: 'is required for a person without an account' }]),
          ...(passwordHash ? [] : [{ field: 'password', message: 'is required for a person without an account' }]),
        ];
        if (missing.length > 0) throw invalidInput(...missing);
      }
      await repo.updateUser(trx, user.id, {
        ...(!user.password_hash && passwordHash ? { password_hash: passwordHash } : {}),
        ...(!user.password_hash && input.name ? { name: input.name } : {}),
        ...(user.email_verified_at ? {} : { email_verified_at: this.#now() }),
      });
      // The invitation may have been withdrawn (member removed) since the mail was sent.
      if (!(await repo.activateMembership(trx, row.tenant_id, user.id))) throw invalidMailToken();
      return this.#startSession(trx, user.id, row.tenant_id);
    });
  }

  // ---- internals -------------------------------------------------------------------------------------

  async #issueMailToken(trx: Tx, purpose: MailTokenPurpose, userId: string, tenantId: string | null, hash: Buffer, ttlMs: number) {
    await repo.insertMailToken(trx, {
      id: newId('session'),
      purpose,
      user_id: userId,
      tenant_id: tenantId,
      token_hash: hash,
      expires_at: new Date(this.#now().getTime() + ttlMs),
    });
  }

  // Locks the token for this transaction and marks it used: if anything after this throws, the
  // transaction rolls back and the link still works.
  async #useMailToken(trx: Tx, token: string, purpose: MailTokenPurpose) {
    const now = this.#now();
    const row = await repo.lockUsableMailToken(trx, hashOpaqueToken(token), purpose, now);
    if (!row) throw invalidMailToken();
    await repo.markMailTokenUsed(trx, row.id, now);
    return row;
  }

  // A login starts a refresh-token family; each refresh continues it with a new token.
  #startSession(trx: Tx, userId: string, tenantId: string): Promise<TokenPair> {
    return this.#continueSession(trx, userId, tenantId, newId('session'));
  }

  async #continueSession(trx: Tx, userId: string, tenantId: string, familyId: string): Promise<TokenPair> {
    const refresh = newOpaqueToken();
    await repo.insertRefreshToken(trx, {
      id: newId('session'),
      family_id: familyId,
      user_id: userId,
      tenant_id: tenantId,
      token_hash: refresh.hash,
      expires_at: new Date(this.#now().getTime() + REFRESH_TOKEN_TTL_MS),
    });
    return {
      access_token: this.#tokens.signAccessToken({ userId, tenantId, sessionId: familyId }),
      refresh_token: refresh.token,
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  // Mail goes out after the transaction commits; a failed send is logged, never turned into an error
  // for the caller (forgot-password must answer the same whatever happens).
  #sendLater(message: Parameters<Mailer['send']>[0]): void {
    this.#mailer.send(message).catch((err) => this.#logger.error({ err, to: message.to, subject: message.subject }, 'mail failed'));
  }
}
