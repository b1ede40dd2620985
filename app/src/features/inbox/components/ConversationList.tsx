import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { LabelChips } from '../../../components/LabelChip.tsx';
import { isSnoozed } from '../../../lib/cache.ts';
import { since, useLabels, useNow } from '../../../lib/hooks.ts';
import { broken, rowsBefore, rowsOf } from '../../../lib/paging.ts';
import { listOptions } from '../api/queries.ts';
import type { View } from '../api/views.ts';
import { SearchBox, SearchResults, useSettled } from './Search.tsx';

const short = (id: string | null) => (id ? id.slice(-4) : '');
// One formatter for every row (toLocaleString with options builds an ICU formatter at each call).
const snoozeFormat = new Intl.DateTimeFormat([], { weekday: 'short', hour: '2-digit', minute: '2-digit' });
/**
 * A row's height before it is measured (title, last message, meta): the usual row's, so that measuring it
 * changes nothing (each change recomputes every position after it).
 */
const ROW_ESTIMATE = 88;
/** Rows left below (or above) the window when the next (or the previous) page is asked for. */
const PREFETCH_ROWS = 20;
/**
 * Rows drawn beyond the window's edges: few, since every row drawn is DOM the tab holds until Blink's next
 * collection, and a scroll that jumps draws a whole new window.
 */
const OVERSCAN = 2;

/**
 * One view's conversations, newest activity first, optionally only those carrying a label (`?label=` in
 * the address); j and k move between them, / goes to the search. Only the rows in (and near) the window
 * are in the DOM, and the next page is read as the member scrolls towards the end. While words are in
 * the search box, the matching conversations show instead.
 */
export function ConversationList({ view: shownView, selected }: { view: View; selected: string | undefined }) {
  const [params, setParams] = useSearchParams();
  const label = params.get('label') ?? undefined;
  const view = useMemo(() => (label ? { ...shownView, query: { ...shownView.query, label } } : shownView), [shownView, label]);
  const suffix = label ? `?label=${encodeURIComponent(label)}` : '';
  const labels = useLabels();
  const [typed, setTyped] = useState('');
  const settled = useSettled(typed.trim());
  const q = typed.trim() ? settled : '';
  const searchInput = useRef<HTMLInputElement>(null);
  const list = useInfiniteQuery(listOptions(view));
  const qc = useQueryClient();
  const now = useNow();
  const navigate = useNavigate();
  const items = useMemo(() => rowsOf(list.data?.pages ?? []), [list.data]);
  // The pages let go above the window keep their place as empty rows, so the rows in view stay put.
  const before = rowsBefore(list.data);
  const count = before + items.length;
  const total = list.data?.pages[0]?.pagination.total ?? count;
  const scroller = useRef<HTMLDivElement>(null);
  const rows = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_ESTIMATE,
    getItemKey: (i) => items[i - before]?.id ?? i,
    overscan: OVERSCAN,
  });
  const shown = rows.getVirtualItems();
  const firstShown = shown[0]?.index ?? 0;
  const lastShown = shown.at(-1)?.index ?? -1;
  const { hasNextPage, hasPreviousPage, isFetching, fetchNextPage, fetchPreviousPage, refetch } = list;
  const isBroken = broken(list.data);

  useEffect(() => {
    if (isFetching) return;
    if (isBroken) void refetch();
    else if (hasPreviousPage && lastShown < before && firstShown === 0) {
      // Back at the top from far below: the head again, not every page between (read one after another).
      void qc.resetQueries({ queryKey: listOptions(view).queryKey, exact: true });
    } else if (hasPreviousPage && firstShown < before + PREFETCH_ROWS) void fetchPreviousPage();
    else if (hasNextPage && lastShown >= count - PREFETCH_ROWS) void fetchNextPage();
  }, [firstShown, lastShown, before, count, isBroken, hasNextPage, hasPreviousPage, isFetching, fetchNextPage, fetchPreviousPage, refetch, qc, view]);

  // The open conversation stays in the window (j and k may move past it).
  const selectedAt = items.findIndex((c) => c.id === selected);
  const selectedIndex = selectedAt >= 0 ? before + selectedAt : -1;
  useEffect(() => {
    if (selectedIndex >= 0) rows.scrollToIndex(selectedIndex, { align: 'auto' });
  }, [selectedIndex, rows]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      if (e.altKey || e.ctrlKey || e.metaKey || target.closest('input, textarea, select, [contenteditable]')) return;
      if (e.key === '/') {
        e.preventDefault();
        searchInput.current?.focus();
        return;
      }
      if (e.key !== 'j' && e.key !== 'k') return;
      const at = items.findIndex((c) => c.id === selected);
      const next = items[e.key === 'j' ? Math.min(items.length - 1, at + 1) : Math.max(0, at - 1)];
      if (next) {
        e.preventDefault();
        void navigate(`/inbox/${view.id}/${next.id}${suffix}`);
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [items, selected, view.id, navigate, suffix]);

  const labelName = labels.data?.data.find((l) => l.id === label)?.name;
  return (
    <section className="list" aria-labelledby="list-heading">
      <SearchBox value={typed} onChange={setTyped} inputRef={searchInput} />
      <h2 id="list-heading">
        {q ? 'Search' : view.label}
        {!q && labelName && <span className="muted"> · {labelName}</span>}
      </h2>
      {q && <SearchResults q={q} viewId={view.id} selected={selected} suffix={suffix} />}
      {!q && (labels.data?.data.length ?? 0) > 0 && (
        <div className="toolbar list-filter">
          <label htmlFor="label-filter">Label</label>
          <select
            id="label-filter"
            value={label ?? ''}
            onChange={(e) => setParams(e.target.value ? { label: e.target.value } : {}, { replace: true })}
          >
            <option value="">All labels</option>
            {labels.data!.data.map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
          </select>
        </div>
      )}
      <ErrorText error={q ? undefined : list.error} />
      {!q && list.isPending && <p className="muted">Loading conversations…</p>}
      {!q && list.isSuccess && items.length === 0 && <p className="muted">Nothing here right now.</p>}
      <div className="scroller" ref={scroller} data-testid="conversation-scroller" hidden={!!q}>
        <ul className="conversations" style={{ height: rows.getTotalSize() }} aria-busy={isFetching}>
          {shown.map((row) => {
            const c = items[row.index - before];
            // A row let go (read again as it nears the window): its place, empty.
            if (!c) return <li key={row.key} aria-hidden="true" style={{ transform: `translateY(${row.start}px)`, height: row.size }} />;
            const waiting = c.status === 'open';
            const title = c.subject ?? `Visitor ${short(c.visitor_id)}`;
            return (
              <li
                key={row.key}
                ref={rows.measureElement}
                data-index={row.index}
                data-conversation={c.id}
                aria-setsize={total}
                aria-posinset={row.index + 1}
                style={{ transform: `translateY(${row.start}px)` }}
              >
                <Link to={`/inbox/${view.id}/${c.id}${suffix}`} aria-current={c.id === selected ? 'page' : undefined} className={c.unread_count ? 'unread' : undefined}>
                  <span className="title">{title}</span>
                  <span className="last">{c.last_message ?? 'No message yet'}</span>
                  <span className="meta">
                    {waiting ? <span className="waiting">{`waiting ${since(c.last_message_at ?? c.created_at, now)}`}</span> : <span>{since(c.last_message_at ?? c.updated_at, now)}</span>}
                    {c.priority !== 'normal' && <span className={`priority ${c.priority}`}>{c.priority}</span>}
                    {isSnoozed(c) && (
                      <span className="snoozed">
                        {c.snoozed_until ? `snoozed until ${snoozeFormat.format(new Date(c.snoozed_until))}` : 'snoozed until a reply'}
                      </span>
                    )}
                    <LabelChips labels={c.labels} />
                    {c.unread_count > 0 && (
                      <span className="badge" aria-label={`${c.unread_count} unread`}>
                        {c.unread_count}
                      </span>
                    )}
                  </span>
                </Link>
              </li>
            );
          })}
        </ul>
        {list.isFetchingNextPage && (
          <p className="muted more" role="status">
            Loading more conversations…
          </p>
        )}
      </div>
    </section>
  );
}
