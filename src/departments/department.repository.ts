import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

// Every query runs as the request role: row-level security keeps them inside the tenant.

export async function listDepartments(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('departments').selectAll().orderBy('name').orderBy('id'), page);
}

export async function findDepartment(trx: Tx, id: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('departments').selectAll().where('id', '=', id);
  if (options.lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function insertDepartment(trx: Tx, department: { id: string; tenant_id: string; name: string; description?: string }) {
  return trx.insertInto('departments').values(department).returningAll().executeTakeFirstOrThrow();
}

export async function updateDepartment(trx: Tx, id: string, changes: { name?: string; description?: string }) {
  return trx
    .updateTable('departments')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteDepartment(trx: Tx, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('departments').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows === 1n;
}

/** Member ids per department, for the departments given. */
export async function memberIdsOf(trx: Tx, departmentIds: string[]): Promise<Map<string, string[]>> {
  const byDepartment = new Map<string, string[]>(departmentIds.map((id) => [id, []]));
  if (departmentIds.length === 0) return byDepartment;
  const rows = await trx
    .selectFrom('department_members')
    .select(['department_id', 'user_id'])
    .where('department_id', 'in', departmentIds)
    .orderBy('created_at')
    .orderBy('user_id')
    .execute();
  for (const row of rows) byDepartment.get(row.department_id)?.push(row.user_id);
  return byDepartment;
}

export async function addDepartmentMembers(trx: Tx, tenantId: string, departmentId: string, userIds: string[]) {
  if (userIds.length === 0) return;
  await trx
    .insertInto('department_members')
    .values(userIds.map((user_id) => ({ tenant_id: tenantId, department_id: departmentId, user_id })))
    .onConflict((oc) => oc.columns(['department_id', 'user_id']).doNothing())
    .execute();
}

export async function removeDepartmentMember(trx: Tx, departmentId: string, userId: string) {
  await trx.deleteFrom('department_members').where('department_id', '=', departmentId).where('user_id', '=', userId).execute();
}

/**
 * Which of these users are active members of the current tenant. Their rows are locked against removal
 * until the transaction ends: a member removed between this check and the insert that names them would
 * otherwise break the insert's foreign key (a 500 where the answer is ERR_USER_NOT_IN_TENANT).
 */
export async function activeMemberIds(trx: Tx, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await trx
    .selectFrom('memberships')
    .select('user_id')
    .where('user_id', 'in', userIds)
    .where('status', '=', 'active')
    .forKeyShare()
    .execute();
  return new Set(rows.map((r) => r.user_id));
}
