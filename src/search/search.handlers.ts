import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { SearchService } from './search.service.ts';

export const searchHandlers = (search: SearchService): Pick<Handlers, 'searchConversations'> => ({
  searchConversations: async ({ principal, query }) => ({ status: 200, body: await search.conversations(requirePrincipal(principal), query) }),
});
