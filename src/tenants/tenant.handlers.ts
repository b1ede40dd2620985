import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import type { TenantService } from './tenant.service.ts';

export const tenantHandlers = (tenants: TenantService): Pick<Handlers, 'getTenant' | 'listTenantMembers'> => ({
  getTenant: async ({ principal, params }) => ({ status: 200, body: await tenants.getTenant(principal!, params.id) }),
  listTenantMembers: async ({ principal, params, query }) => ({
    status: 200,
    body: await tenants.listMembers(principal!, params.id, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      offset: query.offset ?? 0,
    }),
  }),
});
