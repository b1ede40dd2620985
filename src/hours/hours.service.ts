import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { StoredHours } from '../db/schema.ts';
import { invalidInput, notFound } from '../shared/errors.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './hours.repository.ts';
import { problemsOf, statusAt } from './schedule.ts';

type Setting = components['schemas']['BusinessHoursSetting'];
type Update = components['schemas']['BusinessHoursUpdate'];
type StatusDto = components['schemas']['BusinessHoursStatus'];

/** The hours that apply to a department (or the tenant, without one), and whether they are the tenant's. */
export async function applicableHours(trx: Tx, tenantId: string, departmentId: string | null): Promise<{ hours: StoredHours | null; inherited: boolean }> {
  if (departmentId !== null) {
    const department = await repo.departmentHours(trx, departmentId);
    if (!department) throw notFound('Department');
    if (department.own) return { hours: department.own, inherited: false };
    return { hours: await repo.tenantHours(trx, tenantId), inherited: true };
  }
  return { hours: await repo.tenantHours(trx, tenantId), inherited: false };
}

/** Open or closed at `at` under these hours; no hours is always open. */
export function statusOf(hours: StoredHours | null, at: Date): StatusDto {
  if (!hours) return { open: true, next_change_at: null, time_zone: null };
  const { open, next_change_at } = statusAt(hours, at);
  return { open, next_change_at: next_change_at?.toISOString() ?? null, time_zone: hours.time_zone };
}

/** The contract's shape checked beyond its schema; stored with `overrides` always present. */
function checked(input: Update['hours']): StoredHours | null {
  if (input === null) return null;
  const hours: StoredHours = {
    time_zone: input.time_zone,
    weekly: input.weekly as StoredHours['weekly'],
    overrides: (input.overrides ?? []) as StoredHours['overrides'],
  };
  const problems = problemsOf(hours);
  if (problems.length > 0) throw invalidInput(...problems.map((p) => ({ field: `hours/${p.field}`, message: p.message })));
  return hours;
}

export class HoursService {
  readonly #database: Database;
  readonly #now: () => Date;

  constructor(database: Database, now: () => Date = () => new Date()) {
    this.#database = database;
    this.#now = now;
  }

  async get(principal: Principal): Promise<Setting> {
    return this.#database.withTenant(principal.tenantId, (trx) => applicableHours(trx, principal.tenantId, null));
  }

  async put(principal: Principal, input: Update): Promise<Setting> {
    const hours = checked(input.hours);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      await repo.setTenantHours(trx, principal.tenantId, hours);
      return { hours, inherited: false };
    });
  }

  async getForDepartment(principal: Principal, departmentId: string): Promise<Setting> {
    return this.#database.withTenant(principal.tenantId, (trx) => applicableHours(trx, principal.tenantId, departmentId));
  }

  async putForDepartment(principal: Principal, departmentId: string, input: Update): Promise<Setting> {
    const hours = checked(input.hours);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.setDepartmentHours(trx, departmentId, hours))) throw notFound('Department');
      return applicableHours(trx, principal.tenantId, departmentId);
    });
  }

  async status(principal: Principal, departmentId: string | null): Promise<StatusDto> {
    const { hours } = await this.#database.withTenant(principal.tenantId, (trx) => applicableHours(trx, principal.tenantId, departmentId));
    return statusOf(hours, this.#now());
  }
}
