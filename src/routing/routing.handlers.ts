import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { RoutingService } from './routing.service.ts';

type RoutingOps = 'getRouting' | 'putRouting' | 'putRoutingCapacity' | 'getDepartmentRouting' | 'updateDepartmentRouting';

export const routingHandlers = (routing: RoutingService): Pick<Handlers, RoutingOps> => ({
  getRouting: async ({ principal }) => ({ status: 200, body: await routing.getSettings(requirePrincipal(principal)) }),
  putRouting: async ({ principal, body }) => ({ status: 200, body: await routing.putSettings(requirePrincipal(principal), body) }),
  putRoutingCapacity: async ({ principal, params, body }) => ({ status: 200, body: await routing.putCapacity(requirePrincipal(principal), params.userId, body) }),
  getDepartmentRouting: async ({ principal, params }) => ({ status: 200, body: await routing.getDepartment(requirePrincipal(principal), params.id) }),
  updateDepartmentRouting: async ({ principal, params, body }) => ({
    status: 200,
    body: await routing.updateDepartment(requirePrincipal(principal), params.id, body),
  }),
});
