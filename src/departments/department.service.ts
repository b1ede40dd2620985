import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Department } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import { AppError, conflict, notFound } from '../shared/errors.ts';
import { newUuid } from '../shared/ids.ts';
import { pageOf } from '../shared/pagination.ts';
import * as repo from './department.repository.ts';

type DepartmentDto = components['schemas']['Department'];

const toDto = (d: Department, memberIds: string[]): DepartmentDto => ({
  id: d.id,
  name: d.name,
  description: d.description,
  member_ids: memberIds,
  created_at: d.created_at.toISOString(),
  updated_at: d.updated_at.toISOString(),
});

const nameTaken = () => conflict('A department with that name already exists');

export class DepartmentService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, page: { limit: number; offset: number }): Promise<components['schemas']['DepartmentList']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const { rows, total } = await repo.listDepartments(trx, page);
      const members = await repo.memberIdsOf(trx, rows.map((r) => r.id));
      return { data: rows.map((d) => toDto(d, members.get(d.id) ?? [])), pagination: pageOf(total, page, rows.length) };
    });
  }

  async get(principal: Principal, id: string): Promise<DepartmentDto> {
    return this.#database.withTenant(principal.tenantId, async (trx) => this.#load(trx, id));
  }

  async create(principal: Principal, input: components['schemas']['DepartmentCreate']): Promise<DepartmentDto> {
    return this.#database
      .withTenant(principal.tenantId, async (trx) => {
        const memberIds = input.member_ids ?? [];
        await assertActiveMembers(trx, memberIds);
        const department = await repo.insertDepartment(trx, {
          id: newUuid(),
          tenant_id: principal.tenantId,
          name: input.name,
          ...(input.description !== undefined ? { description: input.description } : {}),
        });
        await repo.addDepartmentMembers(trx, principal.tenantId, department.id, memberIds);
        return this.#load(trx, department.id);
      })
      .catch(rethrowNameTaken);
  }

  async update(principal: Principal, id: string, input: components['schemas']['DepartmentUpdate']): Promise<DepartmentDto> {
    return this.#database
      .withTenant(principal.tenantId, async (trx) => {
        const updated = await repo.updateDepartment(trx, id, input);
        if (!updated) throw notFound('Department');
        return this.#load(trx, id);
      })
      .catch(rethrowNameTaken);
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteDepartment(trx, id));
    if (!deleted) throw notFound('Department');
    return { id, deleted: true };
  }

  async addMember(principal: Principal, id: string, userId: string): Promise<DepartmentDto> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findDepartment(trx, id, { lock: true }))) throw notFound('Department');
      await assertActiveMembers(trx, [userId]);
      await repo.addDepartmentMembers(trx, principal.tenantId, id, [userId]);
      return this.#load(trx, id);
    });
  }

  async removeMember(principal: Principal, id: string, userId: string): Promise<DepartmentDto> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findDepartment(trx, id, { lock: true }))) throw notFound('Department');
      await repo.removeDepartmentMember(trx, id, userId);
      return this.#load(trx, id);
    });
  }

  async #load(trx: Tx, id: string): Promise<DepartmentDto> {
    const department = await repo.findDepartment(trx, id);
    if (!department) throw notFound('Department');
    const members = await repo.memberIdsOf(trx, [id]);
    return toDto(department, members.get(id) ?? []);
  }
}

async function assertActiveMembers(trx: Tx, userIds: string[]): Promise<void> {
  const active = await repo.activeMemberIds(trx, userIds);
  const outsiders = userIds.filter((id) => !active.has(id));
  if (outsiders.length > 0) {
    throw new AppError('ERR_USER_NOT_IN_TENANT', `Not an active member of the team: ${outsiders.join(', ')}`);
  }
}

function rethrowNameTaken(err: unknown): never {
  if (isUniqueViolation(err, 'departments_tenant_name_key')) throw nameTaken();
  throw err;
}
