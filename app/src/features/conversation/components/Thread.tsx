import { useMutationState } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import type { Message } from '../../../lib/cache.ts';
import type { TeamMember } from '../../../lib/hooks.ts';
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
/** Messages left above the window when the earlier page is asked for. */
const PREFETCH_MESSAGES = 15;

/**
 * The messages, oldest first, each marked by who wrote it; internal notes cannot pass for replies. Only
 * the messages in (and near) the window are in the DOM: the window stays on what the member reads when
 * earlier pages come in above it, and follows new messages while it is at the end.
 */
export function Thread({ id, me, team }: { id: string; me: string | undefined; team: TeamMember[] }) {
  const thread = useThread(id);
  const messages = useMemo(() => (thread.data?.pages ?? []).flatMap((p) => p.data).toReversed(), [thread.data]);
  const total = thread.data?.pages[0]?.pagination.total ?? messages.length;
  const scroller = useRef<HTMLDivElement>(null);
  const [downloadError, setDownloadError] = useState<unknown>();
  const rows = useVirtualizer({
    count: messages.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => MESSAGE_ESTIMATE,
    getItemKey: (i) => messages[i]?.id ?? i,
    overscan: 6,
    gap: 10,
    paddingStart: 10,
    paddingEnd: 10,
    // A chat: earlier pages come in above without moving what is read; new messages are followed at the end.
    anchorTo: 'end',
    followOnAppend: true,
    scrollEndThreshold: 48,
  });
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = thread;
  // Opened at the newest message; only once it is in view does nearing the top load earlier ones.
  const count = messages.length;
  const opened = useRef(false);
  useLayoutEffect(() => {
    if (opened.current || count === 0) return;
    opened.current = true;
    rows.scrollToIndex(count - 1, { align: 'end' });
  }, [count, rows]);
  const shown = rows.getVirtualItems();
  const firstShown = shown[0]?.index;
  const [atNewest, setAtNewest] = useState(false);
  useEffect(() => {
    if (!atNewest && count > 0 && shown.at(-1)?.index === count - 1) setAtNewest(true);
  }, [atNewest, count, shown]);
  const newest = messages.at(-1);
  // The member's reply from here is shown even when they had scrolled up.
  const sent = useMutationState({ filters: { mutationKey: sendKey(id), status: 'success' } }).length;
  useEffect(() => {
    if (sent > 0) rows.scrollToIndex(rows.options.count - 1, { align: 'end' });
  }, [sent, rows]);
  useEffect(() => {
    if (atNewest && firstShown !== undefined && firstShown < PREFETCH_MESSAGES && hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [atNewest, firstShown, hasNextPage, isFetchingNextPage, fetchNextPage]);

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
            const m = messages[row.index]!;
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
  const first = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!newest) return;
    first.current ??= newest.id;
    if (newest.id === first.current || (newest.sender_type === 'user' && newest.sender_id === me)) return;
    setSaid(`${who(newest, me, team)}: ${newest.content}`);
    // Only a new newest message is news.
  }, [newest?.id]);
  return (
    <p className="visually-hidden" aria-live="polite">
      {said}
    </p>
  );
}
