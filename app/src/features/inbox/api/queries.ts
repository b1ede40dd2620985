import { infiniteQueryOptions } from '@tanstack/react-query';
import { fetchClient } from '../../../lib/api.ts';
import { listKey } from '../../../lib/cache.ts';
import type { View } from './views.ts';

/**
 * One view's conversations, a page at a time by cursor: the first page shows at once, the next ones come
 * as the member scrolls (a tenant with thousands of conversations never loads them all).
 */
export const listOptions = (view: View) =>
  infiniteQueryOptions({
    queryKey: listKey(view.query),
    queryFn: async ({ pageParam, signal }) => {
      const { data, error } = await fetchClient.GET('/v1/conversations', {
        // The first page small, to show fast; the next ones larger, to scroll far in fewer requests.
        params: { query: pageParam ? { ...view.query, limit: 100, cursor: pageParam } : view.query },
        signal,
      });
      if (error) throw error;
      return data;
    },
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.pagination.next_cursor ?? undefined,
  });
