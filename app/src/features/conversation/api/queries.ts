import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { $api, fetchClient, isProblem } from '../../../lib/api.ts';
import { addMessage, type Conversation, conversationKey, LISTS, patchConversation, threadKey, upsertConversation } from '../../../lib/cache.ts';
import { HEAD, MAX_PAGES, nextPageAt, type PageAt, previousPageAt } from '../../../lib/paging.ts';

export const conversationOptions = (id: string) => $api.queryOptions('get', '/v1/conversations/{id}', { params: { path: { id } } });

/**
 * The thread, newest page first (small, to show fast); "load earlier" fetches larger pages back in time.
 * Only a window of pages is kept: scrolling far back lets the newest go, read again on the way down.
 */
export function useThread(id: string) {
  return useInfiniteQuery({
    queryKey: threadKey(id),
    queryFn: async ({ pageParam, signal }) => {
      const { data, error } = await fetchClient.GET('/v1/messages/{conversation_id}', {
        params: { path: { conversation_id: id }, query: pageParam.cursor ? { limit: 100, cursor: pageParam.cursor } : { limit: 50 } },
        signal,
      });
      if (error) throw error;
      return data;
    },
    initialPageParam: HEAD as PageAt,
    getNextPageParam: nextPageAt,
    getPreviousPageParam: previousPageAt,
    maxPages: MAX_PAGES,
    // Each page as read, kept as it is: comparing a window that moved by a page with the one before would
    // match no page with its old place and copy every loaded row anew.
    structuralSharing: false,
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
    snooze: $api.useMutation('post', '/v1/conversations/{id}/snooze', settle),
    unsnooze: $api.useMutation('post', '/v1/conversations/{id}/unsnooze', settle),
    addLabel: $api.useMutation('post', '/v1/conversations/{id}/labels/{label_id}', settle),
    removeLabel: $api.useMutation('delete', '/v1/conversations/{id}/labels/{label_id}', {
      onSuccess: (_: unknown, vars: { params: { path: { label_id: string } } }) =>
        patchConversation(qc, id, (c) => ({ ...c, labels: (c.labels ?? []).filter((l) => l.id !== vars.params.path.label_id) })),
      onError: settle.onError,
    }),
    path,
  };
}

export const sendKey = (conversationId: string) => ['send', conversationId];

export function useSend(conversationId: string) {
  const qc = useQueryClient();
  return useMutation({
    // The pane shows the last send's refusal: a 409 can take the reply box away (the conversation closed).
    mutationKey: sendKey(conversationId),
    mutationFn: async (input: { content: string; internal: boolean; key: string; attachments: string[] }) => {
      const { data, error } = await fetchClient.POST('/v1/messages', {
        params: { header: { 'Idempotency-Key': input.key } },
        body: { conversation_id: conversationId, content: input.content, internal: input.internal, ...(input.attachments.length ? { attachments: input.attachments } : {}) },
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

/** The largest file one upload carries (the contract's `File.size` maximum, 20 MiB). */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

/**
 * Uploads a file for this conversation (streamed by the service; over 20 MiB is refused with 413). A file
 * known to be too large is refused here, as the service would refuse it, before any of it is sent: the
 * member need not wait for 20 MiB to go up to hear it, and a browser that sees the service answer before
 * the body is sent may report a failed request instead of the answer.
 */
export function useUpload(conversationId: string) {
  return useMutation({
    mutationFn: async (file: File) => {
      if (file.size > MAX_UPLOAD_BYTES) {
        throw { status: 413, code: 'ERR_PAYLOAD_TOO_LARGE', title: 'Payload too large', detail: `The file is larger than ${MAX_UPLOAD_BYTES} bytes (20 MiB)` };
      }
      const { data, error } = await fetchClient.POST('/v1/files', {
        // The part's filename becomes the file's name; the generated type says `string` for binary.
        body: { conversation_id: conversationId, file: file as unknown as string },
        bodySerializer: (body) => {
          const form = new FormData();
          form.append('conversation_id', body.conversation_id!);
          form.append('file', body.file as unknown as File, file.name);
          return form;
        },
      });
      if (error) throw error;
      return data;
    },
  });
}

/** Opens a file's signed link: the service answers it as a download. */
export async function download(fileId: string): Promise<void> {
  const { data, error } = await fetchClient.GET('/v1/files/{id}', { params: { path: { id: fileId } } });
  if (error) throw error;
  const link = document.createElement('a');
  link.href = data.url;
  link.download = data.name;
  link.rel = 'noopener';
  link.click();
}
