import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { TeamService } from './team.service.ts';

export const teamHandlers = (team: TeamService): Pick<Handlers, 'listTeamMembers'> => ({
  listTeamMembers: async ({ principal, query }) => ({
    status: 200,
    body: await team.list(requirePrincipal(principal), { includePresence: query.include === 'presence' }),
  }),
});
