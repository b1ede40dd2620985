import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { ConversationService } from './conversation.service.ts';

type ConversationOps =
  | 'listConversations'
  | 'createConversation'
  | 'getConversation'
  | 'updateConversation'
  | 'assignConversation'
  | 'transferConversation'
  | 'closeConversation'
  | 'reopenConversation'
  | 'handoffConversation';

export const conversationHandlers = (conversations: ConversationService): Pick<Handlers, ConversationOps> => ({
  listConversations: async ({ principal, query }) => ({ status: 200, body: await conversations.list(requirePrincipal(principal), query) }),
  createConversation: async ({ principal, body }) => ({ status: 201, body: await conversations.create(requirePrincipal(principal), body) }),
  getConversation: async ({ principal, params }) => ({ status: 200, body: await conversations.get(requirePrincipal(principal), params.id) }),
  updateConversation: async ({ principal, params, body }) => ({
    status: 200,
    body: await conversations.update(requirePrincipal(principal), params.id, body),
  }),
  assignConversation: async ({ principal, params, body }) => ({
    status: 200,
    body: { conversation: await conversations.assign(requirePrincipal(principal), params.id, body.user_id) },
  }),
  transferConversation: async ({ principal, params, body }) => ({
    status: 200,
    body: await conversations.transfer(requirePrincipal(principal), params.id, body),
  }),
  closeConversation: async ({ principal, params }) => ({ status: 200, body: await conversations.close(requirePrincipal(principal), params.id) }),
  handoffConversation: async ({ principal, params, body }) => ({
    status: 200,
    body: await conversations.handoff(requirePrincipal(principal), params.id, body ?? {}),
  }),
  reopenConversation: async ({ principal, params }) => ({ status: 200, body: await conversations.reopen(requirePrincipal(principal), params.id) }),
});
