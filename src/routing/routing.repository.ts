import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { queuePositionOf, waitingSinceOf } from '../db/queue.ts';
import type { RoutingMode } from '../db/schema.ts';

// Every query runs as the request role: row-level security keeps them inside the tenant.

/**
 * Active full-seat members (of one department, or of the tenant with null), each with their capacity,
 * their load (assigned conversations not closed) and when they were last given one; with `userIds`, only
 * those (the ones online).
 */
export async function candidates(trx: Tx, departmentId: string | null, options: { userIds?: string[] } = {}) {
  let members = trx
    .selectFrom('memberships as m')
    .select(['m.user_id', 'm.capacity', 'm.last_assigned_at'])
    .where('m.status', '=', 'active')
    .where('m.seat', '=', 'full')
    .orderBy('m.user_id');
  if (departmentId !== null) {
    members = members.where((eb) =>
      eb.exists(eb.selectFrom('department_members as dm').select(sql`1`.as('one')).where('dm.department_id', '=', departmentId).whereRef('dm.user_id', '=', 'm.user_id')),
    );
  }
  if (options.userIds) {
    if (options.userIds.length === 0) return [];
    members = members.where('m.user_id', 'in', options.userIds);
  }
  const rows = await members.execute();
  if (rows.length === 0) return [];
  const loads = await trx
    .selectFrom('conversations')
    .select(['assigned_user_id', (eb) => eb.fn.countAll<string>().as('n')])
    .where('status', '=', 'assigned')
    .where(
      'assigned_user_id',
      'in',
      rows.map((r) => r.user_id),
    )
    .groupBy('assigned_user_id')
    .execute();
  const load = new Map(loads.map((l) => [l.assigned_user_id!, Number(l.n)]));
  return rows.map((r) => ({ ...r, load: load.get(r.user_id) ?? 0 }));
}

/** Whether anything of the tenant routes (its default or a department is not manual): else the queue waits for people. */
export async function routingInUse(trx: Tx, tenantId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('tenants as t')
    .select((eb) =>
      eb
        .or([eb('t.routing', '<>', 'manual'), eb.exists(eb.selectFrom('departments as d').select(sql`1`.as('one')).where('d.routing', 'in', ['round_robin', 'least_loaded']))])
        .as('in_use'),
    )
    .where('t.id', '=', tenantId)
    .executeTakeFirst();
  return row?.in_use === true;
}

/** How the tenant routes by default, and where its round robin stands. */
export async function tenantRouting(trx: Tx, tenantId: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('tenants').select(['routing', 'round_robin_last_user_id']).where('id', '=', tenantId);
  // NO KEY: rows inserted meanwhile that refer to the tenant (their foreign keys) do not wait for it.
  if (options.lock) query = query.forNoKeyUpdate();
  return query.executeTakeFirstOrThrow();
}

/** A department's routing (null: the tenant's) and round-robin position; undefined when it is gone. */
export async function departmentRouting(trx: Tx, departmentId: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('departments').select(['routing', 'round_robin_last_user_id', 'return_after_minutes']).where('id', '=', departmentId);
  if (options.lock) query = query.forNoKeyUpdate();
  return query.executeTakeFirst();
}

export async function setTenantRouting(trx: Tx, tenantId: string, changes: { routing?: RoutingMode; round_robin_last_user_id?: string | null }) {
  await trx.updateTable('tenants').set(changes).where('id', '=', tenantId).execute();
}

export async function setDepartmentRouting(
  trx: Tx,
  departmentId: string,
  changes: { routing?: RoutingMode | null; round_robin_last_user_id?: string | null; return_after_minutes?: number | null },
): Promise<boolean> {
  const result = await trx.updateTable('departments').set(changes).where('id', '=', departmentId).executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function setCapacity(trx: Tx, userId: string, capacity: number | null): Promise<boolean> {
  const result = await trx.updateTable('memberships').set({ capacity }).where('user_id', '=', userId).where('status', '=', 'active').executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * The queue's head: conversations open, unassigned and not with a bot, oldest first, locked; those
 * another giver holds are skipped rather than waited for (it is giving them out).
 */
export async function lockQueued(trx: Tx, limit: number, after?: { created_at: Date; id: string }) {
  let query = trx
    .selectFrom('conversations')
    .select(['id', 'department_id', 'created_at', 'returned_from_user_id'])
    .where('status', '=', 'open')
    .where('assigned_user_id', 'is', null)
    .where('bot_state', '<>', 'active');
  if (after) query = query.where((eb) => eb.or([eb('created_at', '>', after.created_at), eb.and([eb('created_at', '=', after.created_at), eb('id', '>', after.id)])]));
  return query
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/** Gives several queued conversations (locked by lockQueued) out at once: `[conversation id, member id]` pairs. */
export async function assignMany(trx: Tx, given: [string, string][], now: Date): Promise<void> {
  if (given.length === 0) return;
  const pairs = sql.join(given.map(([id, userId]) => sql`(${id}, ${userId})`));
  await sql`update conversations c set status = 'assigned', assigned_user_id = g.user_id, updated_at = ${now}
    from (values ${pairs}) as g (id, user_id) where c.id = g.id`.execute(trx);
  await trx
    .updateTable('memberships')
    .set({ last_assigned_at: now })
    .where('user_id', 'in', [...new Set(given.map(([, userId]) => userId))])
    .execute();
}

/**
 * Tenants with a conversation waiting in a queue that routes (its department's mode, or the tenant's, is not
 * manual), of every tenant (the scheduler's sweep, as the system). Reads the conversations that are not
 * closed (the idle index's).
 */
export async function tenantsWithQueue(trx: Tx, limit: number) {
  return trx
    .selectFrom('conversations as c')
    .innerJoin('tenants as t', 't.id', 'c.tenant_id')
    .leftJoin('departments as d', 'd.id', 'c.department_id')
    .select('c.tenant_id')
    .distinct()
    .where('c.status', '=', 'open')
    .where('c.assigned_user_id', 'is', null)
    .where('c.bot_state', '<>', 'active')
    .where(sql<string>`coalesce(d.routing, t.routing)`, '<>', 'manual')
    .limit(limit)
    .execute();
}

/** Queued conversations among `ids` (open, unassigned, not with a bot), locked; those another transaction holds are skipped. */
export async function lockQueuedIds(trx: Tx, ids: string[]) {
  if (ids.length === 0) return [];
  return trx
    .selectFrom('conversations')
    .select(['id', 'department_id'])
    .where('id', 'in', ids)
    .where('status', '=', 'open')
    .where('assigned_user_id', 'is', null)
    .where('bot_state', '<>', 'active')
    .orderBy('created_at')
    .orderBy('id')
    .forUpdate()
    .skipLocked()
    .execute();
}

/** A conversation's queue position (null: not queued) and since when its visitor waits (src/db/queue.ts). */
export async function queueFigures(trx: Tx, conversationId: string): Promise<{ queue_position: number | null; waiting_since: Date | null }> {
  const row = await trx
    .selectFrom('conversations as c')
    .select(() => [queuePositionOf('c').as('queue_position'), waitingSinceOf('c').as('waiting_since')])
    .where('c.id', '=', conversationId)
    .executeTakeFirst();
  return { queue_position: row?.queue_position ?? null, waiting_since: row?.waiting_since ?? null };
}

/**
 * The return timer's test on a conversation `c` joined to its department `d`: assigned, the department
 * has a timer, and a visitor message not answered by the assignee (no reply of theirs visible to the
 * visitor since) has waited longer than the timer, counted from when the assignee got it at the earliest.
 */
const expired = sql<boolean>`c.status = 'assigned' and d.return_after_minutes is not null and exists (
  select 1 from messages m
  where m.conversation_id = c.id and m.sender_type = 'visitor'
    and m.created_at > coalesce((
      select max(r.created_at) from messages r
      where r.conversation_id = c.id and r.sender_type = 'user' and r.sender_id = c.assigned_user_id and not r.internal
    ), '-infinity'::timestamptz)
    and greatest(m.created_at, c.assigned_at) <= now() - make_interval(mins => d.return_after_minutes))`;

/** Conversations whose return timer ran out, of every tenant (the scheduler's job, as the system). */
export async function expiredAssignments(trx: Tx, limit: number) {
  return trx
    .selectFrom('conversations as c')
    .innerJoin('departments as d', 'd.id', 'c.department_id')
    .select(['c.id', 'c.tenant_id'])
    .where('c.status', '=', 'assigned')
    .where('d.return_after_minutes', 'is not', null)
    .where(expired)
    .orderBy('c.assigned_at')
    .limit(limit)
    .execute();
}

/** The conversation locked, if its timer has still run out now (nobody answered or moved it meanwhile). */
export async function lockExpired(trx: Tx, conversationId: string) {
  return trx
    .selectFrom('conversations as c')
    .innerJoin('departments as d', 'd.id', 'c.department_id')
    .select(['c.id', 'c.tenant_id', 'c.assigned_user_id', 'c.department_id', 'd.return_after_minutes'])
    .where('c.id', '=', conversationId)
    .where(expired)
    .forUpdate('c')
    .executeTakeFirst();
}

/** Back to the queue, remembering whom from (routing passes them over for it). */
export async function returnToQueue(trx: Tx, conversationId: string, fromUserId: string, now: Date): Promise<void> {
  await trx
    .updateTable('conversations')
    .set({ status: 'open', assigned_user_id: null, returned_from_user_id: fromUserId, updated_at: now })
    .where('id', '=', conversationId)
    .execute();
}
