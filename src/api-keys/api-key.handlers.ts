import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requireUser } from '../shared/principal.ts';
import type { ApiKeyService } from './api-key.service.ts';

export const apiKeyHandlers = (keys: ApiKeyService): Pick<Handlers, 'listApiKeys' | 'createApiKey' | 'revokeApiKey' | 'rotateApiKey'> => ({
  listApiKeys: async ({ principal, query }) => ({
    status: 200,
    body: await keys.list(requireUser(principal), { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  createApiKey: async ({ principal, body }) => ({ status: 201, body: await keys.create(requireUser(principal), body) }),
  revokeApiKey: async ({ principal, params }) => ({ status: 200, body: await keys.revoke(requireUser(principal), params.id) }),
  rotateApiKey: async ({ principal, params }) => ({ status: 200, body: await keys.rotate(requireUser(principal), params.id) }),
});
