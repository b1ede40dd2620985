import { useMutationState, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { type Message, threadKey } from '../../../lib/cache.ts';
import type { TeamMember } from '../../../lib/hooks.ts';
import { broken, holdsHead, rowsBefore, rowsOf } from '../../../lib/paging.ts';
import { download, sendKey, useThread } from '../api/queries.ts';

// One formatter for every row: toLocaleTimeString with options builds an ICU formatter at each call, held
// outside the JS heap until a collection, and the rows in view are drawn again at each scroll.
const timeFormat = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' });
const time = (iso: string) => timeFormat.format(new Date(iso));

function who(m: Message, me: string | undefined, team: TeamMember[]): string {
  if (m.sender_type === 'visitor') return 'Visitor';
  if (m.sender_type === 'bot') return m.author?.name ? `${m.author.name} (bot)` : 'Bot';
  if (m.sender_type === 'system') return 'System';
  if (m.sender_id && m.sender_id === me) return 'You';
  return team.find((t) => t.user_id === m.sender_id)?.name ?? 'Team';
}

function kind(m: Message): string {
  if (m.internal) return 'note';
  if (m.sender_type === 'system' || m.type === 'system' || m.type === 'survey') return 'system';
  return m.sender_type === 'user' ? 'agent' : m.sender_type;
}

/**
 * A message's height before it is measured (one line of text and its header): the usual one's, so that
 * measuring it changes nothing (each change recomputes every position after it).
 */
const MESSAGE_ESTIMATE = 58;
/** Messages left above (or below) the window when the earlier (or the later) page is asked for. */
const PREFETCH_MESSAGES = 15;
/** Messages drawn beyond the window's edges: few, as in the inbox's list (each is DOM until Blink's next collection). */
const OVERSCAN = 2;

/**
 * The messages, oldest first, each marked by who wrote it; internal notes cannot pass for replies. Only
 * the messages in (and near) the window are in the DOM: the window stays on what the member reads when
 * earlier pages come in above it, and follows new messages while it is at the end.
 */
export function Thread({ id, me, team }: { id: string; me: string | undefined; team: TeamMember[] }) {
  const thread = useThread(id);
  const qc = useQueryClient();
  const messages = useMemo(() => rowsOf(thread.data?.pages ?? []).toReversed(), [thread.data]);
  // The newer pages let go below the window (scrolled far back) keep their place as empty rows.
  const after = rowsBefore(thread.data);
  const loaded = messages.length;
  const total = thread.data?.pages[0]?.pagination.total ?? loaded + after;
  const scroller = useRef<HTMLDivElement>(null);
  const [downloadError, setDownloadError] = useState<unknown>();
  const rows = useVirtualizer({
    count: loaded + after,
    getScrollElement: () => scroller.current,
    estimateSize: () => MESSAGE_ESTIMATE,
    getItemKey: (i) => messages[i]?.id ?? i,
    overscan: OVERSCAN,
    gap: 10,
    paddingStart: 10,
    paddingEnd: 10,
    // A chat: earlier pages come in above without moving what is read; new messages are followed at the end.
    anchorTo: 'end',
    followOnAppend: true,
    scrollEndThreshold: 48,
  });
  const { hasNextPage, hasPreviousPage, isFetching, isFetchingNextPage, fetchNextPage, fetchPreviousPage, refetch } = thread;
  // Opened at the newest message; only once it is in view does nearing the top load earlier ones.
  const count = loaded + after;
  const opened = useRef(false);
  useLayoutEffect(() => {
    if (count === 0) opened.current = false;
    if (opened.current || count === 0) return;
    opened.current = true;
    rows.scrollToIndex(count - 1, { align: 'end' });
  }, [count, rows]);
  const shown = rows.getVirtualItems();
  const firstShown = shown[0]?.index;
  const lastShown = shown.at(-1)?.index ?? -1;
  const [atNewest, setAtNewest] = useState(false);
  useEffect(() => {
    if (!atNewest && count > 0 && lastShown === count - 1) setAtNewest(true);
  }, [atNewest, count, lastShown]);
  const newest = holdsHead(thread.data) ? messages.at(-1) : undefined;
  // The member's reply from here is shown even when they had scrolled up.
  const sent = useMutationState({ filters: { mutationKey: sendKey(id), status: 'success' } }).length;
  useEffect(() => {
    if (sent > 0) rows.scrollToIndex(rows.options.count - 1, { align: 'end' });
  }, [sent, rows]);
  const isBroken = broken(thread.data);
  useEffect(() => {
    if (isFetching || firstShown === undefined) return;
    if (isBroken) void refetch();
    else if (hasPreviousPage && firstShown >= loaded && lastShown === count - 1) {
      // Down at the newest from far back: the newest page again, not every page between.
      void qc.resetQueries({ queryKey: threadKey(id), exact: true });
    } else if (hasPreviousPage && lastShown >= loaded - PREFETCH_MESSAGES) void fetchPreviousPage();
    else if (atNewest && firstShown < PREFETCH_MESSAGES && hasNextPage) void fetchNextPage();
  }, [atNewest, firstShown, lastShown, loaded, count, isBroken, hasNextPage, hasPreviousPage, isFetching, fetchNextPage, fetchPreviousPage, refetch, qc, id]);

  return (
    <div className="thread">
      <ErrorText error={thread.error ?? downloadError} />
      {hasNextPage && (
        <button type="button" className="earlier" onClick={() => void fetchNextPage()} disabled={isFetchingNextPage}>
          {isFetchingNextPage ? 'Loading…' : 'Load earlier messages'}
        </button>
      )}
      <div className="scroller" ref={scroller} data-testid="message-scroller">
        <ol className="messages" aria-label="Messages" aria-busy={isFetchingNextPage} style={{ height: rows.getTotalSize() }}>
          {shown.map((row) => {
            const m = messages[row.index];
            // A message let go (read again as it nears the window): its place, empty.
            if (!m) return <li key={row.key} aria-hidden="true" style={{ transform: `translateY(${row.start}px)`, height: row.size }} />;
            const k = kind(m);
            return (
              <li
                key={row.key}
                ref={rows.measureElement}
                data-index={row.index}
                className={`message ${k}`}
                data-message={m.id}
                aria-setsize={total}
                aria-posinset={total - count + row.index + 1}
                style={{ transform: `translateY(${row.start}px)` }}
              >
                <span className="who">
                  {k === 'note' ? `Internal note · ${who(m, me, team)}` : who(m, me, team)}
                  <time dateTime={m.created_at}>{time(m.created_at)}</time>
                </span>
                <span className="text">{m.content}</span>
                {m.attachments.length > 0 && (
                  <ul className="attachments" aria-label="Attachments">
                    {m.attachments.map((a) => (
                      <li key={a.id}>
                        <button type="button" className="file" onClick={() => (setDownloadError(undefined), download(a.id).catch(setDownloadError))}>
                          Download {a.name} ({Math.ceil(a.size / 1024)} KB)
                        </button>
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            );
          })}
        </ol>
      </div>
      <Announcer newest={newest} me={me} team={team} />
    </div>
  );
}

/**
 * Says each new message of someone else to screen readers, once: the list itself is not a live region,
 * since rows come and go there as the member scrolls.
 */
function Announcer({ newest, me, team }: { newest: Message | undefined; me: string | undefined; team: TeamMember[] }) {
  const [said, setSaid] = useState('');
  // The newest message known: one later than it is news (the newest page read again after scrolling back is not).
  const known = useRef<Message | undefined>(undefined);
  useEffect(() => {
    if (!newest) return;
    const before = known.current;
    if (before && Date.parse(newest.created_at) <= Date.parse(before.created_at)) return;
    known.current = newest;
    if (!before || (newest.sender_type === 'user' && newest.sender_id === me)) return;
    setSaid(`${who(newest, me, team)}: ${newest.content}`);
    // Only a new newest message is news.
  }, [newest?.id]);
  return (
    <p className="visually-hidden" aria-live="polite">
      {said}
    </p>
  );
}
