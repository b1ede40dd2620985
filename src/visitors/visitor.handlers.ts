import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { VisitorService } from './visitor.service.ts';

export const visitorHandlers = (visitors: VisitorService): Pick<Handlers, 'getVisitor' | 'listVisitors'> => ({
  listVisitors: async ({ principal, query }) => ({ status: 200, body: await visitors.list(requirePrincipal(principal), query) }),
  getVisitor: async ({ principal, params }) => ({ status: 200, body: await visitors.get(requirePrincipal(principal), params.id) }),
});
