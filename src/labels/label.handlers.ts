import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { LabelService } from './label.service.ts';

type LabelOps = 'listLabels' | 'createLabel' | 'updateLabel' | 'deleteLabel' | 'addConversationLabel' | 'removeConversationLabel';

export const labelHandlers = (labels: LabelService): Pick<Handlers, LabelOps> => ({
  listLabels: async ({ principal, query }) => ({ status: 200, body: await labels.list(requirePrincipal(principal), query) }),
  createLabel: async ({ principal, body }) => ({ status: 201, body: await labels.create(requirePrincipal(principal), body) }),
  updateLabel: async ({ principal, params, body }) => ({ status: 200, body: await labels.update(requirePrincipal(principal), params.id, body) }),
  deleteLabel: async ({ principal, params }) => ({ status: 200, body: await labels.remove(requirePrincipal(principal), params.id) }),
  addConversationLabel: async ({ principal, params }) => ({ status: 200, body: await labels.addToConversation(requirePrincipal(principal), params.id, params.label_id) }),
  removeConversationLabel: async ({ principal, params }) => ({
    status: 200,
    body: await labels.removeFromConversation(requirePrincipal(principal), params.id, params.label_id),
  }),
});
