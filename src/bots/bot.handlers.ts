import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal, requireUser } from '../shared/principal.ts';
import type { BotService } from './bot.service.ts';

type BotOps = 'listBots' | 'createBot' | 'getBot' | 'updateBot' | 'deleteBot' | 'rotateBotKey' | 'rotateBotSecret';

const pageOf = (query: { limit?: number; offset?: number }) => ({ limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 });

export const botHandlers = (bots: BotService): Pick<Handlers, BotOps> => ({
  listBots: async ({ principal, query }) => ({ status: 200, body: await bots.list(requirePrincipal(principal), pageOf(query)) }),
  createBot: async ({ principal, body }) => ({ status: 201, body: await bots.create(requireUser(principal), body) }),
  getBot: async ({ principal, params }) => ({ status: 200, body: await bots.get(requirePrincipal(principal), params.id) }),
  updateBot: async ({ principal, params, body }) => ({ status: 200, body: await bots.update(requirePrincipal(principal), params.id, body) }),
  deleteBot: async ({ principal, params }) => ({ status: 200, body: await bots.remove(requirePrincipal(principal), params.id) }),
  rotateBotKey: async ({ principal, params }) => ({ status: 200, body: await bots.rotateKey(requirePrincipal(principal), params.id) }),
  rotateBotSecret: async ({ principal, params }) => ({ status: 200, body: await bots.rotateSecret(requirePrincipal(principal), params.id) }),
});
