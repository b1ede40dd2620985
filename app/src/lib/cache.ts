// What the server owns lives in the TanStack Query cache, nowhere else. These functions apply a change
// (from a socket event or a mutation's answer) to every cached query it touches, by id: a conversation
// to its detail and to each cached list whose filter it now matches (and out of those it left); a
// message to its thread once. Applying the same change twice leaves the cache as applying it once did.
import type { InfiniteData, QueryClient, QueryKey } from '@tanstack/react-query';
import type { paths } from '../../../generated/api.ts';
import { type Schemas, session } from './api.ts';
import { holdsHead, type PageAt } from './paging.ts';

export type Conversation = Schemas['Conversation'];
export type Message = Schemas['Message'];
type ConversationList = Schemas['ConversationList'];
type MessageList = Schemas['MessageList'];
export type ListQuery = NonNullable<paths['/v1/conversations']['get']['parameters']['query']>;

export const LISTS: QueryKey = ['get', '/v1/conversations'];
/** A list the inbox pages through by cursor (infinite); a plain `$api` query of the same filter has the key without 'pages'. */
export const listKey = (query: ListQuery): QueryKey => [...LISTS, { params: { query } }, 'pages'];
export const conversationKey = (id: string): QueryKey => ['get', '/v1/conversations/{id}', { params: { path: { id } } }];
export const threadKey = (id: string): QueryKey => ['thread', id];

/** Whether a list with this filter shows the conversation; undefined when the app cannot tell (a text search). */
function belongs(c: Conversation, q: ListQuery | undefined): boolean | undefined {
  if (!q) return true;
  if (q.q !== undefined) return undefined;
  if (q.status && c.status !== q.status) return false;
  if (q.assigned_to === 'none' && c.assigned_user_id !== null) return false;
  if (q.assigned_to === 'me') {
    const me = session.userId;
    if (!me) return undefined;
    if (c.assigned_user_id !== me) return false;
  }
  if (q.assigned_to?.startsWith('usr_') && c.assigned_user_id !== q.assigned_to) return false;
  if (q.department_id && c.department_id !== q.department_id) return false;
  if (q.priority && c.priority !== q.priority) return false;
  if (q.visitor_id && c.visitor_id !== q.visitor_id) return false;
  if (q.contact_id && c.contact_id !== q.contact_id) return false;
  if (q.label && !(c.labels ?? []).some((l) => l.id === q.label)) return false;
  if (q.snoozed !== undefined && q.snoozed !== isSnoozed(c)) return false;
  return true;
}

/** Set aside (until a time, or until the visitor writes again): the inbox views leave it out. */
export const isSnoozed = (c: Conversation): boolean => !!c.snoozed_until || !!c.snooze_until_reply;

const activity = (c: Conversation) => Date.parse(c.last_message_at ?? c.updated_at);

/** A cached list: one page (a plain query) or the pages the inbox loaded so far (an infinite query). */
type CachedList = ConversationList | InfiniteData<ConversationList, PageAt>;
const isPaged = (list: CachedList): list is InfiniteData<ConversationList, PageAt> => 'pages' in list;
export const pagesOf = (list: CachedList | undefined): ConversationList[] => (!list ? [] : isPaged(list) ? list.pages : [list]);
const isPagedFromHead = (list: CachedList): boolean => !isPaged(list) || holdsHead(list);

function listQueryOf(key: QueryKey): ListQuery | undefined {
  return (key[2] as { params?: { query?: ListQuery } } | undefined)?.params?.query;
}

/** The cached copy of a conversation, from its detail or any list. */
export function findConversation(qc: QueryClient, id: string): Conversation | undefined {
  const detail = qc.getQueryData<Conversation>(conversationKey(id));
  if (detail) return detail;
  for (const [, list] of qc.getQueriesData<CachedList>({ queryKey: LISTS })) {
    for (const page of pagesOf(list)) {
      const found = page.data.find((c) => c.id === id);
      if (found) return found;
    }
  }
  return undefined;
}

/** Puts the conversation as it now is into its detail and every cached list. */
export function upsertConversation(qc: QueryClient, c: Conversation): void {
  if (qc.getQueryData(conversationKey(c.id))) qc.setQueryData(conversationKey(c.id), c);
  for (const [key, list] of qc.getQueriesData<CachedList>({ queryKey: LISTS })) {
    if (!list) continue;
    const fits = belongs(c, listQueryOf(key));
    if (fits === undefined) {
      void qc.invalidateQueries({ queryKey: key, exact: true });
      continue;
    }
    const pages = pagesOf(list);
    const had = pages.some((page) => page.data.some((x) => x.id === c.id));
    if (!fits && !had) continue;
    const delta = (fits && !had ? 1 : 0) - (!fits && had ? 1 : 0);
    const rest = pages.map((page) => page.data.filter((x) => x.id !== c.id));
    // Into the page where its activity puts it; past the last loaded one (more to come), the next pages bring
    // it, and so do the earlier pages, read again, when it goes above a window that no longer holds the head.
    if (fits) {
      const at = rest.findIndex((data) => data.some((x) => activity(x) <= activity(c)));
      const last = pages.at(-1)!;
      const above = at === 0 && !isPagedFromHead(list) && rest[0]!.length > 0 && activity(rest[0]![0]!) <= activity(c);
      const target = above ? -1 : at >= 0 ? at : last.pagination.next_cursor ? -1 : rest.length - 1;
      if (target >= 0) rest[target] = [...rest[target]!, c].sort((a, b) => activity(b) - activity(a));
    }
    const next = pages.map((page, i) => ({ ...page, data: rest[i]!, pagination: { ...page.pagination, total: Math.max(0, page.pagination.total + delta) } }));
    const value: CachedList | undefined = isPaged(list) ? { ...list, pages: next } : next[0];
    qc.setQueryData(key, () => value);
  }
}

/** Changes a conversation the cache knows; one it does not know makes the lists load again. */
export function patchConversation(qc: QueryClient, id: string, patch: (c: Conversation) => Conversation): void {
  const current = findConversation(qc, id);
  if (!current) {
    void qc.invalidateQueries({ queryKey: LISTS });
    return;
  }
  upsertConversation(qc, patch(current));
}

/** Adds a message to its thread (once, by id) and to its conversation's summary. */
export function addMessage(qc: QueryClient, message: Message, options: { reading: boolean }): void {
  let added = true;
  qc.setQueryData<InfiniteData<MessageList, PageAt>>(threadKey(message.conversation_id), (thread) => {
    if (!thread) return thread;
    if (thread.pages.some((page) => page.data.some((m) => m.id === message.id))) {
      added = false;
      return thread;
    }
    const [newest, ...older] = thread.pages;
    // A window scrolled far back no longer holds the newest page: reading it again brings the message.
    if (!newest || !holdsHead(thread)) return thread;
    return { ...thread, pages: [{ ...newest, data: [message, ...newest.data], pagination: { ...newest.pagination, total: newest.pagination.total + 1 } }, ...older] };
  });
  if (!added) return;
  if (message.internal) return;
  patchConversation(qc, message.conversation_id, (c) => {
    if (c.last_message_at && Date.parse(c.last_message_at) > Date.parse(message.created_at)) return c;
    const unread = message.sender_type === 'visitor' && !options.reading ? c.unread_count + 1 : c.unread_count;
    return { ...c, last_message: message.content, last_message_at: message.created_at, updated_at: message.created_at, unread_count: unread };
  });
}
