import type { Tx } from '../db/database.ts';

/** Active members, oldest first. */
export async function listActiveMembers(trx: Tx) {
  return trx
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.user_id', 'u.name', 'u.email', 'm.role', 'm.seat'])
    .where('m.status', '=', 'active')
    .orderBy('m.created_at')
    .orderBy('m.user_id')
    .execute();
}

export async function listDepartmentMemberships(trx: Tx) {
  return trx.selectFrom('department_members').select(['user_id', 'department_id']).orderBy('department_id').execute();
}

/** How many conversations each member has assigned to them and not closed. */
export async function countOpenConversationsByAssignee(trx: Tx) {
  return trx
    .selectFrom('conversations')
    .select(['assigned_user_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('status', '=', 'assigned')
    .where('assigned_user_id', 'is not', null)
    .groupBy('assigned_user_id')
    .execute();
}
