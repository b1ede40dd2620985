import { useEffect, useMemo, useRef, useState } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import type { Message } from '../../../lib/cache.ts';
import type { TeamMember } from '../../../lib/hooks.ts';
import { download, useThread } from '../api/queries.ts';

const time = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

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

/** The messages, oldest first, each marked by who wrote it; internal notes cannot pass for replies. */
export function Thread({ id, me, team }: { id: string; me: string | undefined; team: TeamMember[] }) {
  const thread = useThread(id);
  const messages = useMemo(() => (thread.data?.pages ?? []).flatMap((p) => p.data).toReversed(), [thread.data]);
  const end = useRef<HTMLDivElement>(null);
  const [downloadError, setDownloadError] = useState<unknown>();
  const newest = messages.at(-1)?.id;
  useEffect(() => {
    end.current?.scrollIntoView({ block: 'end' });
  }, [newest]);

  return (
    <div className="thread">
      <ErrorText error={thread.error ?? downloadError} />
      {thread.hasNextPage && (
        <button type="button" className="earlier" onClick={() => void thread.fetchNextPage()} disabled={thread.isFetchingNextPage}>
          {thread.isFetchingNextPage ? 'Loading…' : 'Load earlier messages'}
        </button>
      )}
      <div role="log" aria-label="Messages">
        <ol className="messages">
          {messages.map((m) => {
            const k = kind(m);
            return (
              <li key={m.id} className={`message ${k}`} data-message={m.id}>
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
      <div ref={end} className="end" />
    </div>
  );
}
