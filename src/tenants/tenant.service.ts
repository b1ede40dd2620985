import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Tenant } from '../db/schema.ts';
import type { Principal } from '../http/access.ts';
import { notFound } from '../shared/errors.ts';
import { pageOf } from '../shared/pagination.ts';
import * as repo from './tenant.repository.ts';

type TenantDto = components['schemas']['Tenant'];
type MemberListDto = components['schemas']['MemberList'];

export const toTenantDto = (t: Tenant): TenantDto => ({
  id: t.id,
  name: t.name,
  timezone: t.timezone,
  settings: t.settings,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

export class TenantService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  findActiveMembership(tenantId: string, userId: string) {
    return this.#database.withTenant(tenantId, (trx) => repo.findActiveMembership(trx, tenantId, userId));
  }

  // A caller only ever reaches its own tenant: any other id is "not found", whether it exists or not.
  async getTenant(principal: Principal, id: string): Promise<TenantDto> {
    if (id !== principal.tenantId) throw notFound('Tenant');
    const tenant = await this.#database.withTenant(principal.tenantId, (trx) => repo.findTenant(trx, id));
    if (!tenant) throw notFound('Tenant');
    return toTenantDto(tenant);
  }

  async listMembers(principal: Principal, id: string, page: { limit: number; offset: number }): Promise<MemberListDto> {
    if (id !== principal.tenantId) throw notFound('Tenant');
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listMembers(trx, page));
    return {
      data: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
      pagination: pageOf(total, page, rows.length),
    };
  }
}
