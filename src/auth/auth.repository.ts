import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import type { MailTokenPurpose, NewRefreshToken, NewUser } from '../db/schema.ts';

export async function insertUser(trx: Tx, user: NewUser) {
  return trx.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
}

export async function findUserByEmail(trx: Tx, email: string) {
  return trx
    .selectFrom('users')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function findUser(trx: Tx, id: string) {
  return trx.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateUser(
  trx: Tx,
  id: string,
  changes: { name?: string; password_hash?: string; email_verified_at?: Date },
) {
  await trx
    .updateTable('users')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

// ---- refresh tokens ----------------------------------------------------------------------------------

export async function insertRefreshToken(trx: Tx, token: NewRefreshToken) {
  await trx.insertInto('refresh_tokens').values(token).execute();
}

export async function findRefreshTokenByHash(trx: Tx, hash: Buffer) {
  return trx.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/**
 * Marks the token used. Of two concurrent claims exactly one gets the row: the other waits for the
 * first's row lock, then finds rotated_at set and updates nothing.
 */
export async function claimRefreshToken(trx: Tx, id: string, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('refresh_tokens')
    .set({ rotated_at: now })
    .where('id', '=', id)
    .where('rotated_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function revokeFamily(trx: Tx, familyId: string, now: Date) {
  await trx.updateTable('refresh_tokens').set({ revoked_at: now }).where('family_id', '=', familyId).where('revoked_at', 'is', null).execute();
}

export async function revokeUserFamilies(trx: Tx, userId: string, now: Date, tenantId?: string) {
  let query = trx.updateTable('refresh_tokens').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null);
  if (tenantId) query = query.where('tenant_id', '=', tenantId);
  await query.execute();
}

/**
 * In one round trip: whether the login (refresh family) is still live, and the user's role and seat in
 * the tenant if their membership there is active.
 */
export async function findSession(trx: Tx, tenantId: string, userId: string, familyId: string) {
  const result = await sql<{ session_live: boolean; role: 'owner' | 'admin' | 'agent' | null; seat: 'full' | 'lite' | null }>`
    select
      exists (
        select 1 from refresh_tokens r
        where r.family_id = ${familyId} and r.user_id = ${userId} and r.revoked_at is null
      ) as session_live,
      m.role, m.seat
    from (select 1) as one
    left join memberships m on m.tenant_id = ${tenantId} and m.user_id = ${userId} and m.status = 'active'
  `.execute(trx);
  const row = result.rows[0]!;
  return { sessionLive: row.session_live, membership: row.role && row.seat ? { role: row.role, seat: row.seat } : undefined };
}

// ---- single-use mail tokens ----------------------------------------------------------------------

export async function insertMailToken(
  trx: Tx,
  token: { id: string; purpose: MailTokenPurpose; user_id: string; tenant_id?: string | null; token_hash: Buffer; expires_at: Date },
) {
  await trx.insertInto('mail_tokens').values(token).execute();
}

/** A usable token (unused, unexpired), locked until the transaction ends so only one use can win. */
export async function lockUsableMailToken(trx: Tx, hash: Buffer, purpose: MailTokenPurpose, now: Date) {
  return trx
    .selectFrom('mail_tokens')
    .selectAll()
    .where('token_hash', '=', hash)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .forUpdate()
    .executeTakeFirst();
}

export async function markMailTokenUsed(trx: Tx, id: string, now: Date) {
  await trx.updateTable('mail_tokens').set({ used_at: now }).where('id', '=', id).execute();
}

// Memberships as logins read them: the tenants feature manages them, auth checks them when it issues tokens.

export async function findActiveMembership(trx: Tx, tenantId: string, userId: string) {
  return trx
    .selectFrom('memberships')
    .select(['role', 'seat'])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('status', '=', 'active')
    .executeTakeFirst();
}

/** The tenant the user joined first, for logins that name none. Runs as the system role. */
export async function findFirstActiveTenantOfUser(trx: Tx, userId: string) {
  const row = await trx
    .selectFrom('memberships')
    .select('tenant_id')
    .where('user_id', '=', userId)
    .where('status', '=', 'active')
    .orderBy('created_at')
    .orderBy('tenant_id')
    .limit(1)
    .executeTakeFirst();
  return row?.tenant_id;
}

export async function activateMembership(trx: Tx, tenantId: string, userId: string): Promise<boolean> {
  const result = await trx
    .updateTable('memberships')
    .set({ status: 'active', updated_at: new Date() })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('status', '=', 'invited')
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
