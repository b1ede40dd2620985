import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../shared/principal.ts';
import type { PresenceStore } from '../presence/presence.ts';
import * as team from './team.repository.ts';

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
      members: await team.listActiveMembers(trx),
      departments: await team.listDepartmentMemberships(trx),
      open: options.includePresence ? await team.countOpenConversationsByAssignee(trx) : [],
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

  /** Whether someone in the team can answer now: an active full-seat member who is online (not away). */
  async available(tenantId: string): Promise<boolean> {
    const members = await this.#database.withTenant(tenantId, (trx) => team.listActiveMembers(trx));
    const full = members.filter((m) => m.seat === 'full').map((m) => m.user_id);
    if (full.length === 0) return false;
    const presence = await this.#presence.presenceOf(tenantId, full);
    return full.some((id) => presence.get(id) === 'online');
  }
}
