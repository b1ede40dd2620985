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
