import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { User } from '../db/schema.ts';
import { AppError, conflict, forbidden, unauthenticated } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { isUniqueViolation } from '../db/errors.ts';
import * as tenantRepo from '../tenants/tenant.repository.ts';
import { toTenantDto } from '../tenants/tenant.service.ts';
import * as repo from './auth.repository.ts';
import type { PasswordHasher } from './password.ts';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_MS, type TokenService, newOpaqueToken } from './tokens.ts';

type RegisterRequest = components['schemas']['RegisterRequest'];
type RegisterResponse = components['schemas']['RegisterResponse'];
type LoginRequest = components['schemas']['LoginRequest'];
type TokenPair = components['schemas']['TokenPair'];

const toUserDto = (u: User): components['schemas']['User'] => ({
  id: u.id,
  email: u.email,
  name: u.name,
  email_verified: u.email_verified_at !== null,
  created_at: u.created_at.toISOString(),
});

export function isValidTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

export class AuthService {
  readonly #database: Database;
  readonly #passwords: PasswordHasher;
  readonly #tokens: TokenService;
  readonly #now: () => Date;

  constructor(deps: { database: Database; passwords: PasswordHasher; tokens: TokenService; now?: () => Date }) {
    this.#database = deps.database;
    this.#passwords = deps.passwords;
    this.#tokens = deps.tokens;
    this.#now = deps.now ?? (() => new Date());
  }

  async register(input: RegisterRequest): Promise<RegisterResponse> {
    const timezone = input.timezone ?? 'UTC';
    if (!isValidTimeZone(timezone)) {
      throw new AppError('ERR_VALIDATION', 'The request does not match the API contract', {
        fieldErrors: [{ path: '/body/timezone', message: 'must be an IANA time zone name' }],
      });
    }
    const passwordHash = await this.#passwords.hash(input.password);
    try {
      return await this.#database.asSystem(async (trx) => {
        const user = await repo.insertUser(trx, {
          id: newId('user'),
          email: input.email,
          name: input.name,
          password_hash: passwordHash,
        });
        const tenant = await tenantRepo.insertTenant(trx, {
          id: newId('tenant'),
          name: input.tenant_name ?? input.name,
          timezone,
        });
        await tenantRepo.insertMembership(trx, { tenant_id: tenant.id, user_id: user.id, role: 'owner', seat: 'full' });
        const tokens = await this.#startSession(trx, user.id, tenant.id);
        return { ...tokens, user: toUserDto(user), tenant: toTenantDto(tenant) };
      });
    } catch (err) {
      if (isUniqueViolation(err, 'users_email_key')) throw conflict('The e-mail address is already registered');
      throw err;
    }
  }

  async login(input: LoginRequest): Promise<TokenPair> {
    const user = await this.#database.asSystem((trx) => repo.findUserByEmail(trx, input.email));
    const passwordOk = user?.password_hash
      ? await this.#passwords.verify(input.password, user.password_hash)
      : await this.#passwords.verifyAgainstNothing(input.password);
    if (!user || !passwordOk) throw unauthenticated('The e-mail address or the password is wrong');
    return this.#database.asSystem(async (trx) => {
      const tenantId = input.tenant_id
        ? (await tenantRepo.findActiveMembership(trx, input.tenant_id, user.id)) && input.tenant_id
        : await tenantRepo.findFirstActiveTenantOfUser(trx, user.id);
      if (!tenantId) {
        throw forbidden(input.tenant_id ? 'You are not an active member of this tenant' : 'You are not an active member of any tenant');
      }
      return this.#startSession(trx, user.id, tenantId);
    });
  }

  // A login starts a refresh-token family; each refresh continues it with a new token.
  async #startSession(trx: Tx, userId: string, tenantId: string): Promise<TokenPair> {
    const familyId = newId('session');
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
}
