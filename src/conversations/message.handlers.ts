import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { MessageService } from './message.service.ts';

export const messageHandlers = (messages: MessageService): Pick<Handlers, 'sendMessage' | 'listMessages' | 'markConversationRead'> => ({
  sendMessage: async ({ principal, body, req }) => {
    const { message, replayed } = await messages.send(requirePrincipal(principal), body, req.get('idempotency-key'));
    return { status: 201, body: message, ...(replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}) };
  },
  listMessages: async ({ principal, params, query }) => ({
    status: 200,
    body: await messages.list(requirePrincipal(principal), params.conversation_id, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      ...(query.cursor ? { cursor: query.cursor } : {}),
    }),
  }),
  markConversationRead: async ({ principal, params }) => ({
    status: 200,
    body: await messages.markRead(requirePrincipal(principal), params.conversation_id),
  }),
});
