import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../http/access.ts';
import type { PresenceStore } from '../presence/presence.ts';

type S = components['schemas'];

export class TeamService {
  readonly #database: Database;
  readonly #presence: PresenceStore;

  constructor(deps: { database: Database; presence: PresenceStore }) {
    this.#database = deps.database;
    this.#presence = deps.presence;
  }

  // Active members, oldest first, each with their departments; with presence, also their presence and
  // the number of their conversations that are not closed.
  async list(principal: Principal, options: { includePresence: boolean }): Promise<S['TeamMemberList']> {
    const { members, departments, open } = await this.#database.withTenant(principal.tenantId, async (trx) => ({
      members: await trx
        .selectFrom('memberships as m')
        .innerJoin('users as u', 'u.id', 'm.user_id')
        .select(['m.user_id', 'u.name', 'u.email', 'm.role', 'm.seat'])
        .where('m.status', '=', 'active')
        .orderBy('m.created_at')
        .orderBy('m.user_id')
        .execute(),
      departments: await trx.selectFrom('department_members').select(['user_id', 'department_id']).orderBy('department_id').execute(),
      open: options.includePresence
        ? await trx
            .selectFrom('conversations')
            .select(['assigned_user_id', (eb) => eb.fn.countAll<number>().as('n')])
            .where('status', '=', 'assigned')
            .where('assigned_user_id', 'is not', null)
            .groupBy('assigned_user_id')
            .execute()
        : [],
    }));
    const departmentIds = new Map<string, string[]>();
    for (const d of departments) departmentIds.set(d.user_id, [...(departmentIds.get(d.user_id) ?? []), d.department_id]);
    const openCount = new Map(open.map((o) => [o.assigned_user_id!, Number(o.n)]));
    const presence = options.includePresence
      ? await this.#presence.presenceOf(principal.tenantId, members.map((m) => m.user_id))
      : undefined;
    return {
      data: members.map((m) => ({
        ...m,
        department_ids: departmentIds.get(m.user_id) ?? [],
        ...(presence ? { presence: presence.get(m.user_id) ?? 'offline', open_conversations: openCount.get(m.user_id) ?? 0 } : {}),
      })),
    };
  }
}
