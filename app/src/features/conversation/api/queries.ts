import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { $api, fetchClient, isProblem } from '../../../lib/api.ts';
import { addMessage, type Conversation, conversationKey, LISTS, patchConversation, threadKey, upsertConversation } from '../../../lib/cache.ts';

export const conversationOptions = (id: string) => $api.queryOptions('get', '/v1/conversations/{id}', { params: { path: { id } } });

/** The thread, newest page first; "load earlier" fetches the next page back in time. */
export function useThread(id: string) {
  return useInfiniteQuery({
    queryKey: threadKey(id),
    queryFn: async ({ pageParam, signal }) => {
      const { data, error } = await fetchClient.GET('/v1/messages/{conversation_id}', {
        params: { path: { conversation_id: id }, query: pageParam ? { limit: 50, cursor: pageParam } : { limit: 50 } },
        signal,
      });
      if (error) throw error;
      return data;
    },
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.pagination.next_cursor ?? undefined,
  });
}

/**
 * The member's actions on a conversation. Each answer is the conversation as it now is; a 409 (closed or
 * taken meanwhile) reloads it, so the screen shows what happened while the error says it in words.
 */
export function useConversationActions(id: string) {
  const qc = useQueryClient();
  const settle = {
    onSuccess: (data: { conversation: Conversation }) => upsertConversation(qc, data.conversation),
    onError: (error: unknown) => {
      if (isProblem(error) && (error.status === 409 || error.status === 404)) {
        void qc.invalidateQueries({ queryKey: conversationKey(id) });
        void qc.invalidateQueries({ queryKey: LISTS });
      }
    },
  };
  const path = { params: { path: { id } } };
  return {
    assign: $api.useMutation('post', '/v1/conversations/{id}/assign', settle),
    transfer: $api.useMutation('post', '/v1/conversations/{id}/transfer', settle),
    close: $api.useMutation('post', '/v1/conversations/{id}/close', settle),
    reopen: $api.useMutation('post', '/v1/conversations/{id}/reopen', settle),
    update: $api.useMutation('put', '/v1/conversations/{id}', { onSuccess: (c: Conversation) => upsertConversation(qc, c), onError: settle.onError }),
    path,
  };
}

export const sendKey = (conversationId: string) => ['send', conversationId];

export function useSend(conversationId: string) {
  const qc = useQueryClient();
  return useMutation({
    // The pane shows the last send's refusal: a 409 can take the reply box away (the conversation closed).
    mutationKey: sendKey(conversationId),
    mutationFn: async (input: { content: string; internal: boolean; key: string }) => {
      const { data, error } = await fetchClient.POST('/v1/messages', {
        params: { header: { 'Idempotency-Key': input.key } },
        body: { conversation_id: conversationId, content: input.content, internal: input.internal },
      });
      if (error) throw error;
      return data;
    },
    onSuccess: (message) => addMessage(qc, message, { reading: true }),
    onError: (error) => {
      if (isProblem(error) && error.status === 409) void qc.invalidateQueries({ queryKey: conversationKey(conversationId) });
    },
  });
}

/** Marks the conversation read for this member; its unread count drops to zero everywhere. */
export function useMarkRead(conversationId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      const { data, error } = await fetchClient.POST('/v1/messages/{conversation_id}/read', { params: { path: { conversation_id: conversationId } } });
      if (error) throw error;
      return data;
    },
    onSuccess: (read) => patchConversation(qc, conversationId, (c) => ({ ...c, unread_count: read.unread_count })),
  });
}
