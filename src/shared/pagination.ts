import type { components } from '../../generated/api.ts';

export type Pagination = components['schemas']['Pagination'];

export const DEFAULT_PAGE_SIZE = 20;

/** The pagination object of an offset-paged list. */
export function pageOf(total: number, page: { limit: number; offset: number }, returned: number): Pagination {
  return {
    total,
    limit: page.limit,
    offset: page.offset,
    has_more: page.offset + returned < total,
    next_cursor: null,
  };
}

/** The pagination object of a keyset-paged list: next_cursor points after the last row returned. */
export function keysetPageOf<R>(
  rows: R[],
  page: { limit: number; hasMore: boolean; total: number; estimated?: boolean },
  cursorOf: (last: R) => string,
): Pagination {
  const last = rows[rows.length - 1];
  return {
    total: page.total,
    limit: page.limit,
    offset: 0,
    has_more: page.hasMore,
    next_cursor: page.hasMore && last !== undefined ? cursorOf(last) : null,
    ...(page.estimated ? { total_is_estimate: true as const } : {}),
  };
}
