import { infiniteQueryOptions } from '@tanstack/react-query';
import { fetchClient } from '../../../lib/api.ts';
import { listKey } from '../../../lib/cache.ts';
import { HEAD, MAX_PAGES, nextPageAt, type PageAt, previousPageAt } from '../../../lib/paging.ts';
import type { View } from './views.ts';

/**
 * One view's conversations, a page at a time by cursor: the first page shows at once, the next ones come
 * as the member scrolls (a tenant with thousands of conversations never loads them all), and only a window
 * of pages is kept: those the member scrolled past are let go, and read again when they scroll back.
 */
export const listOptions = (view: View) =>
  infiniteQueryOptions({
    queryKey: listKey(view.query),
    queryFn: async ({ pageParam, signal }) => {
      const { data, error } = await fetchClient.GET('/v1/conversations', {
        // The first page small, to show fast; the next ones larger, to scroll far in fewer requests.
        params: { query: pageParam.cursor ? { ...view.query, limit: 100, cursor: pageParam.cursor } : view.query },
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
