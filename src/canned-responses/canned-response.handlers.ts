import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { CannedResponseService } from './canned-response.service.ts';

export const cannedResponseHandlers = (
  canned: CannedResponseService,
): Pick<Handlers, 'listCannedResponses' | 'createCannedResponse' | 'updateCannedResponse' | 'deleteCannedResponse'> => ({
  listCannedResponses: async ({ principal, query }) => ({ status: 200, body: await canned.list(requirePrincipal(principal), query) }),
  createCannedResponse: async ({ principal, body }) => ({ status: 201, body: await canned.create(requirePrincipal(principal), body) }),
  updateCannedResponse: async ({ principal, params, body }) => ({
    status: 200,
    body: await canned.update(requirePrincipal(principal), params.id, body),
  }),
  deleteCannedResponse: async ({ principal, params }) => ({ status: 200, body: await canned.remove(requirePrincipal(principal), params.id) }),
});
