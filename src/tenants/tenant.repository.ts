import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
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

// No tenant filter here: the request role only sees the current tenant's memberships (row-level security).
export async function listMembers(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(
    trx
      .selectFrom('memberships as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['m.user_id', 'u.email', 'u.name', 'm.role', 'm.seat', 'm.status', 'm.created_at'])
      .orderBy('m.created_at')
      .orderBy('m.user_id'),
    page,
  );
}

export async function lockTenant(trx: Tx, id: string) {
  return trx.selectFrom('tenants').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function updateTenant(trx: Tx, id: string, changes: { name?: string; timezone?: string; settings?: Record<string, unknown> }) {
  return trx
    .updateTable('tenants')
    .set({ ...changes, ...(changes.settings ? { settings: JSON.stringify(changes.settings) } : {}), updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

const memberColumns = ['m.user_id', 'u.email', 'u.name', 'm.role', 'm.seat', 'm.status', 'm.created_at'] as const;

export async function findMember(trx: Tx, userId: string) {
  return trx
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(memberColumns)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
}

/**
 * Locks the tenant's active owners' memberships and the target's. Everything that could take away an
 * owner takes these locks first, so two owners demoting each other at once cannot leave none.
 */
export async function lockOwnersAndMember(trx: Tx, userId: string) {
  const rows = await trx
    .selectFrom('memberships')
    .select(['user_id', 'role', 'seat', 'status'])
    .where((eb) => eb.or([eb('user_id', '=', userId), eb.and([eb('role', '=', 'owner'), eb('status', '=', 'active')])]))
    .orderBy('user_id')
    .forUpdate()
    .execute();
  return {
    target: rows.find((r) => r.user_id === userId),
    activeOwners: rows.filter((r) => r.role === 'owner' && r.status === 'active').length,
  };
}

export async function updateMembership(trx: Tx, userId: string, changes: { role?: 'owner' | 'admin' | 'agent'; seat?: 'full' | 'lite' }) {
  await trx
    .updateTable('memberships')
    .set({ ...changes, updated_at: new Date() })
    .where('user_id', '=', userId)
    .execute();
}

export async function deleteMembership(trx: Tx, userId: string) {
  await trx.deleteFrom('memberships').where('user_id', '=', userId).execute();
}

/** Membership of one user in one tenant, whatever its status (system role). */
export async function findMembershipAnyStatus(trx: Tx, tenantId: string, userId: string) {
  return trx
    .selectFrom('memberships')
    .select(['role', 'seat', 'status'])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}
