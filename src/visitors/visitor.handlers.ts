import type { EventService } from '../events/event.service.ts';
import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { TeamService } from '../team/team.service.ts';
import type { VisitorService } from './visitor.service.ts';

export const visitorHandlers = (visitors: VisitorService): Pick<Handlers, 'getVisitor' | 'listVisitors'> => ({
  listVisitors: async ({ principal, query }) => ({ status: 200, body: await visitors.list(requirePrincipal(principal), query) }),
  getVisitor: async ({ principal, params }) => ({ status: 200, body: await visitors.get(requirePrincipal(principal), params.id) }),
});

export const teamHandlers = (team: TeamService): Pick<Handlers, 'listTeamMembers'> => ({
  listTeamMembers: async ({ principal, query }) => ({
    status: 200,
    body: await team.list(requirePrincipal(principal), { includePresence: query.include === 'presence' }),
  }),
});

export const eventHandlers = (events: EventService): Pick<Handlers, 'listEvents'> => ({
  listEvents: async ({ principal, query }) => ({ status: 200, body: await events.list(requirePrincipal(principal), query) }),
});
