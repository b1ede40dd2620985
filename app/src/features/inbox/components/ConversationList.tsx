import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { Link, useNavigate } from 'react-router';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { since, useNow } from '../../../lib/hooks.ts';
import { listOptions } from '../api/queries.ts';
import type { View } from '../api/views.ts';

const short = (id: string | null) => (id ? id.slice(-4) : '');

/** One view's conversations, newest activity first; j and k move between them. */
export function ConversationList({ view, selected }: { view: View; selected: string | undefined }) {
  const list = useQuery(listOptions(view));
  const now = useNow();
  const navigate = useNavigate();
  const items = list.data?.data ?? [];

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      if (e.altKey || e.ctrlKey || e.metaKey || target.closest('input, textarea, select, [contenteditable]')) return;
      if (e.key !== 'j' && e.key !== 'k') return;
      const at = items.findIndex((c) => c.id === selected);
      const next = items[e.key === 'j' ? Math.min(items.length - 1, at + 1) : Math.max(0, at - 1)];
      if (next) {
        e.preventDefault();
        void navigate(`/inbox/${view.id}/${next.id}`);
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [items, selected, view.id, navigate]);

  return (
    <section className="list" aria-labelledby="list-heading">
      <h2 id="list-heading">{view.label}</h2>
      <ErrorText error={list.error} />
      {list.isPending && <p className="muted">Loading conversations…</p>}
      {list.isSuccess && items.length === 0 && <p className="muted">Nothing here right now.</p>}
      <ul className="conversations">
        {items.map((c) => {
          const waiting = c.status === 'open';
          const title = c.subject ?? `Visitor ${short(c.visitor_id)}`;
          return (
            <li key={c.id} data-conversation={c.id}>
              <Link to={`/inbox/${view.id}/${c.id}`} aria-current={c.id === selected ? 'page' : undefined} className={c.unread_count ? 'unread' : undefined}>
                <span className="title">{title}</span>
                <span className="last">{c.last_message ?? 'No message yet'}</span>
                <span className="meta">
                  {waiting ? <span className="waiting">waiting {since(c.last_message_at ?? c.created_at, now)}</span> : <span>{since(c.last_message_at ?? c.updated_at, now)}</span>}
                  {c.priority !== 'normal' && <span className={`priority ${c.priority}`}>{c.priority}</span>}
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
    </section>
  );
}
