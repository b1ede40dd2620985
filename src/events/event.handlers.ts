import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { EventService } from './event.service.ts';

export const eventHandlers = (events: EventService): Pick<Handlers, 'listEvents'> => ({
  listEvents: async ({ principal, query }) => ({ status: 200, body: await events.list(requirePrincipal(principal), query) }),
});
