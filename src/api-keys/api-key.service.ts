import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import { hashOpaqueToken } from '../auth/tokens.ts';
import type { SessionCache } from '../auth/session-cache.ts';
import type { Database, Tx } from '../db/database.ts';
import { notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { pageOf } from '../shared/pagination.ts';
import type { UserPrincipal } from '../shared/principal.ts';
import * as repo from './api-key.repository.ts';

type Schemas = components['schemas'];
type Scope = Schemas['ApiKeyScope'];
type Row = { id: string; name: string; scopes: string[]; prefix: string; created_at: Date; rotated_at: Date | null; last_used_at: Date | null };

const KEY_PREFIX = 'chat_';
/** The one scope of a bot's key; integrations' keys cannot be given it (it is not an ApiKeyScope). */
export const BOT_SCOPE = 'bot';
/** How stale last_used_at may get: one write a minute per key, not one per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

const toDto = (row: Row): Schemas['ApiKey'] => ({
  id: row.id,
  name: row.name,
  scopes: row.scopes as Scope[],
  prefix: row.prefix,
  created_at: row.created_at.toISOString(),
  rotated_at: row.rotated_at?.toISOString() ?? null,
  last_used_at: row.last_used_at?.toISOString() ?? null,
});

/** A new key value: 256 random bits behind a recognisable prefix; only its SHA-256 is stored. */
function newKeyValue() {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, KEY_PREFIX.length + 8), key_hash: hashOpaqueToken(key) };
}

/** A bot's key, made in the transaction that makes the bot: scope `bot`, answered once. */
export async function createBotKey(trx: Tx, bot: { id: string; tenant_id: string; name: string }, createdBy: string): Promise<string> {
  const value = newKeyValue();
  await repo.insertApiKey(trx, {
    id: newId('apiKey'),
    tenant_id: bot.tenant_id,
    name: `Bot ${bot.name}`.slice(0, 100),
    scopes: [BOT_SCOPE],
    prefix: value.prefix,
    key_hash: value.key_hash,
    created_by: createdBy,
    bot_id: bot.id,
  });
  return value.key;
}

/** A bot's key gets a new value, answered once; undefined when the bot has no live key. */
export async function rotateBotKey(trx: Tx, botId: string): Promise<string | undefined> {
  const value = newKeyValue();
  return (await repo.replaceBotKeySecret(trx, botId, { prefix: value.prefix, key_hash: value.key_hash }, new Date())) ? value.key : undefined;
}

export class ApiKeyService {
  readonly #database: Database;
  /** Told (on every instance) when a key's value stops working, so that its sockets close at once. */
  readonly #sessions: Pick<SessionCache, 'changed'> | undefined;

  constructor(database: Database, sessions?: Pick<SessionCache, 'changed'>) {
    this.#database = database;
    this.#sessions = sessions;
  }

  async create(user: UserPrincipal, input: Schemas['ApiKeyCreate']): Promise<Schemas['ApiKeyWithSecret']> {
    const value = newKeyValue();
    const row = await this.#database.withTenant(user.tenantId, (trx) =>
      repo.insertApiKey(trx, {
        id: newId('apiKey'),
        tenant_id: user.tenantId,
        name: input.name,
        scopes: input.scopes,
        prefix: value.prefix,
        key_hash: value.key_hash,
        created_by: user.userId,
      }),
    );
    return { ...toDto(row), key: value.key };
  }

  async list(user: UserPrincipal, page: { limit: number; offset: number }): Promise<Schemas['ApiKeyList']> {
    const { rows, total } = await this.#database.withTenant(user.tenantId, (trx) => repo.listLiveApiKeys(trx, page));
    return { data: rows.map(toDto), pagination: pageOf(total, page, rows.length) };
  }

  async revoke(user: UserPrincipal, id: string): Promise<{ id: string; deleted: true }> {
    const revoked = await this.#database.withTenant(user.tenantId, (trx) => repo.revokeApiKey(trx, id, new Date()));
    if (!revoked) throw notFound('API key');
    this.#sessions?.changed({ apiKeyId: id });
    return { id, deleted: true };
  }

  async rotate(user: UserPrincipal, id: string): Promise<Schemas['ApiKeyWithSecret']> {
    const value = newKeyValue();
    const row = await this.#database.withTenant(user.tenantId, (trx) =>
      repo.replaceApiKeySecret(trx, id, { prefix: value.prefix, key_hash: value.key_hash }, new Date()),
    );
    if (!row) throw notFound('API key');
    this.#sessions?.changed({ apiKeyId: id });
    return { ...toDto(row), key: value.key };
  }

  /** Whether the key with this value's hash still works (sockets opened with it are checked at heartbeats). */
  async isLive(keyHash: Buffer): Promise<boolean> {
    return this.#database.asSystem(async (trx) => (await repo.findLiveApiKeyByHash(trx, keyHash)) !== undefined);
  }

  /** Authentication: the key's tenant and scopes, if the key is live. Keeps last_used_at to the minute. */
  async authenticate(key: string): Promise<{ keyId: string; tenantId: string; scopes: string[]; botId?: string } | undefined> {
    if (!key.startsWith(KEY_PREFIX)) return undefined;
    return this.#database.asSystem(async (trx) => {
      const row = await repo.findLiveApiKeyByHash(trx, hashOpaqueToken(key));
      if (!row) return undefined;
      const now = new Date();
      if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() > LAST_USED_RESOLUTION_MS) await repo.touchApiKey(trx, row.id, now);
      return { keyId: row.id, tenantId: row.tenant_id, scopes: row.scopes, ...(row.bot_id ? { botId: row.bot_id } : {}) };
    });
  }
}
