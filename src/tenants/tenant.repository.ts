import type { Tx } from '../db/database.ts';
import type { NewMembership, NewTenant } from '../db/schema.ts';

export async function insertTenant(trx: Tx, tenant: NewTenant) {
  return trx.insertInto('tenants').values(tenant).returningAll().executeTakeFirstOrThrow();
}

export async function findTenant(trx: Tx, id: string) {
  return trx.selectFrom('tenants').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertMembership(trx: Tx, membership: NewMembership) {
  await trx.insertInto('memberships').values(membership).execute();
}

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

// No tenant filter here: the request role only sees the current tenant's memberships (row-level security).
export async function listMembers(trx: Tx, page: { limit: number; offset: number }) {
  const rows = await trx
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.user_id', 'u.email', 'u.name', 'm.role', 'm.seat', 'm.status', 'm.created_at'])
    .orderBy('m.created_at')
    .orderBy('m.user_id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const { total } = await trx
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .executeTakeFirstOrThrow();
  return { rows, total };
}
