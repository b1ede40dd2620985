import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { SnoozeService } from './snooze.service.ts';

export const snoozeHandlers = (snooze: SnoozeService): Pick<Handlers, 'snoozeConversation' | 'unsnoozeConversation'> => ({
  snoozeConversation: async ({ principal, params, body }) => ({ status: 200, body: await snooze.snooze(requirePrincipal(principal), params.id, body) }),
  unsnoozeConversation: async ({ principal, params }) => ({ status: 200, body: await snooze.unsnooze(requirePrincipal(principal), params.id) }),
});
