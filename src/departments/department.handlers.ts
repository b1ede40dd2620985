import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { DepartmentService } from './department.service.ts';

type DepartmentOps =
  | 'listDepartments'
  | 'createDepartment'
  | 'getDepartment'
  | 'updateDepartment'
  | 'deleteDepartment'
  | 'addDepartmentMember'
  | 'removeDepartmentMember';

export const departmentHandlers = (departments: DepartmentService): Pick<Handlers, DepartmentOps> => ({
  listDepartments: async ({ principal, query }) => ({
    status: 200,
    body: await departments.list(requirePrincipal(principal), { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  createDepartment: async ({ principal, body }) => ({ status: 201, body: await departments.create(requirePrincipal(principal), body) }),
  getDepartment: async ({ principal, params }) => ({ status: 200, body: await departments.get(requirePrincipal(principal), params.id) }),
  updateDepartment: async ({ principal, params, body }) => ({
    status: 200,
    body: await departments.update(requirePrincipal(principal), params.id, body),
  }),
  deleteDepartment: async ({ principal, params }) => ({ status: 200, body: await departments.remove(requirePrincipal(principal), params.id) }),
  addDepartmentMember: async ({ principal, params }) => ({
    status: 200,
    body: await departments.addMember(requirePrincipal(principal), params.id, params.userId),
  }),
  removeDepartmentMember: async ({ principal, params }) => ({
    status: 200,
    body: await departments.removeMember(requirePrincipal(principal), params.id, params.userId),
  }),
});
