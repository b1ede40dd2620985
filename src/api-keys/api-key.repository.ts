import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

// A bot's key (bot_id set) is the bot's: made, shown and removed with it, never listed, revoked or rotated here.
const PUBLIC_COLUMNS = ['id', 'name', 'scopes', 'prefix', 'created_at', 'rotated_at', 'last_used_at'] as const;

export async function insertApiKey(
  trx: Tx,
  key: { id: string; tenant_id: string; name: string; scopes: string[]; prefix: string; key_hash: Buffer; created_by: string; bot_id?: string },
) {
  return trx.insertInto('api_keys').values(key).returning(PUBLIC_COLUMNS).executeTakeFirstOrThrow();
}

export async function listLiveApiKeys(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(
    trx.selectFrom('api_keys').select(PUBLIC_COLUMNS).where('revoked_at', 'is', null).where('bot_id', 'is', null).orderBy('created_at', 'desc').orderBy('id', 'desc'),
    page,
  );
}

export async function revokeApiKey(trx: Tx, id: string, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .where('bot_id', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function replaceApiKeySecret(trx: Tx, id: string, secret: { prefix: string; key_hash: Buffer }, now: Date) {
  return trx
    .updateTable('api_keys')
    .set({ ...secret, rotated_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .where('bot_id', 'is', null)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirst();
}

/** A bot's key gets a new value (the old one stops working at once); false when the bot has no live key. */
export async function replaceBotKeySecret(trx: Tx, botId: string, secret: { prefix: string; key_hash: Buffer }, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('api_keys')
    .set({ ...secret, rotated_at: now })
    .where('bot_id', '=', botId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Authentication lookup, across tenants (system role). */
export async function findLiveApiKeyByHash(trx: Tx, hash: Buffer) {
  return trx
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'scopes', 'last_used_at', 'bot_id'])
    .where('key_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function touchApiKey(trx: Tx, id: string, now: Date) {
  await trx.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
}
