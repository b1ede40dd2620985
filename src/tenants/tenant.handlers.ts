import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal, requireUser } from '../shared/principal.ts';
import type { TenantService } from './tenant.service.ts';

type TenantOps = 'createTenant' | 'getTenant' | 'updateTenant' | 'listTenantMembers' | 'addTenantMember' | 'updateTenantMember' | 'removeTenantMember';

export const tenantHandlers = (tenants: TenantService): Pick<Handlers, TenantOps> => ({
  createTenant: async ({ principal, body }) => ({ status: 201, body: await tenants.createTenant(requireUser(principal), body) }),
  getTenant: async ({ principal, params }) => ({ status: 200, body: await tenants.getTenant(requirePrincipal(principal), params.id) }),
  updateTenant: async ({ principal, params, body }) => ({
    status: 200,
    body: await tenants.updateTenant(requirePrincipal(principal), params.id, body),
  }),
  listTenantMembers: async ({ principal, params, query }) => ({
    status: 200,
    body: await tenants.listMembers(requirePrincipal(principal), params.id, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      offset: query.offset ?? 0,
    }),
  }),
  addTenantMember: async ({ principal, params, body }) => ({
    status: 201,
    body: await tenants.addMember(requireUser(principal), params.id, body),
  }),
  updateTenantMember: async ({ principal, params, body }) => ({
    status: 200,
    body: await tenants.updateMember(requireUser(principal), params.id, params.userId, body),
  }),
  removeTenantMember: async ({ principal, params }) => ({
    status: 200,
    body: await tenants.removeMember(requireUser(principal), params.id, params.userId),
  }),
});
