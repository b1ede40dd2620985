import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { HoursService } from './hours.service.ts';

type HoursOps = 'getBusinessHours' | 'putBusinessHours' | 'getBusinessHoursStatus' | 'getDepartmentBusinessHours' | 'putDepartmentBusinessHours';

export const hoursHandlers = (hours: HoursService): Pick<Handlers, HoursOps> => ({
  getBusinessHours: async ({ principal }) => ({ status: 200, body: await hours.get(requirePrincipal(principal)) }),
  putBusinessHours: async ({ principal, body }) => ({ status: 200, body: await hours.put(requirePrincipal(principal), body) }),
  getBusinessHoursStatus: async ({ principal, query }) => ({
    status: 200,
    body: await hours.status(requirePrincipal(principal), query.department_id ?? null),
  }),
  getDepartmentBusinessHours: async ({ principal, params }) => ({ status: 200, body: await hours.getForDepartment(requirePrincipal(principal), params.id) }),
  putDepartmentBusinessHours: async ({ principal, params, body }) => ({
    status: 200,
    body: await hours.putForDepartment(requirePrincipal(principal), params.id, body),
  }),
});
