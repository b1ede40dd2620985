// The inbox's list and a conversation's thread keep only a window of the pages they read (TanStack Query's
// maxPages): a member who scrolls through 10,000 conversations or a 5,000-message thread holds a few hundred
// rows in the cache and the DOM, not all of them. Pages are read by the API's forward cursor; each page's
// parameter remembers the one before it, so that scrolling back reads a page that was let go again.

/**
 * Where a page starts: the cursor that reads it (none for the list's head), how many rows come before it in
 * the API's order (the rows let go above the window, so that what stays keeps its place on screen), and
 * the parameter of the page before it.
 */
export interface PageAt {
  cursor?: string;
  before: number;
  prev?: PageAt;
}

export const HEAD: PageAt = { before: 0 };

/** Pages a list keeps: the head page and two more of 100 make the window 250 rows at most. */
export const MAX_PAGES = 3;

interface Page {
  data: unknown[];
  pagination: { next_cursor: string | null };
}

export const nextPageAt = (last: Page, _pages: Page[], lastAt: PageAt): PageAt | undefined =>
  last.pagination.next_cursor ? { cursor: last.pagination.next_cursor, before: lastAt.before + last.data.length, prev: lastAt } : undefined;

export const previousPageAt = (_first: Page, _pages: Page[], firstAt: PageAt): PageAt | undefined => firstAt.prev;

/** The cached pages of a windowed list (its page parameters typed loosely, as the query hooks give them). */
interface Window {
  pages: Page[];
  pageParams: unknown[];
}
const paramsOf = (data: Window) => data.pageParams as (PageAt | undefined)[];

/** Rows before the window (let go as the member scrolled on). */
export const rowsBefore = (data: Window | undefined): number => (data ? (paramsOf(data)[0]?.before ?? 0) : 0);

/** Whether the window starts at the list's head (the newest rows), where live changes go. */
export const holdsHead = (data: Window | undefined): boolean => !data || !paramsOf(data)[0]?.cursor;

/**
 * Whether the window's pages no longer follow one another: a page read again after it was let go ends
 * elsewhere than before when rows came in or left meanwhile (the head page always holds the newest rows),
 * leaving rows out or twice. Reading the window again from its first page mends it.
 */
export function broken(data: Window | undefined): boolean {
  if (!data) return false;
  const params = paramsOf(data);
  return data.pages.some((page, i) => i + 1 < data.pages.length && page.pagination.next_cursor !== params[i + 1]?.cursor);
}

/** Each row once, by id (a page read again may overlap its neighbour until the window is read again). */
export function rowsOf<T extends { id: string }>(pages: { data: T[] }[]): T[] {
  const seen = new Set<string>();
  const rows: T[] = [];
  for (const page of pages) {
    for (const row of page.data) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      rows.push(row);
    }
  }
  return rows;
}
