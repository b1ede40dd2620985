import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { $api } from '../../../lib/api.ts';

/** Who the visitor is: contact details, the pages they saw, their earlier conversations. */
export function VisitorPanel({ visitorId, conversationId }: { visitorId: string; conversationId: string }) {
  // Read again each time a conversation opens: the socket tells nothing of pages seen or of the visitor's other conversations.
  const visitor = useQuery($api.queryOptions('get', '/v1/visitors/{id}', { params: { path: { id: visitorId } } }, { staleTime: 0 }));
  const v = visitor.data;
  if (!v) return null;
  // Newest first: the first is where the visitor is (or last was).
  const [current, ...rest] = v.recent_pages;
  const earlier = rest.slice(0, 5);
  return (
    <aside className="visitor-panel" aria-label="Visitor">
      <h3>{v.contact?.name ?? v.name ?? 'Anonymous visitor'}</h3>
      {(v.contact?.email ?? v.email) && <p>{v.contact?.email ?? v.email}</p>}
      {(v.contact?.phone || v.contact?.company) && (
        <dl className="facts contact-facts">
          {v.contact.phone && (
            <>
              <dt>Phone</dt>
              <dd>{v.contact.phone}</dd>
            </>
          )}
          {v.contact.company && (
            <>
              <dt>Company</dt>
              <dd>{v.contact.company}</dd>
            </>
          )}
        </dl>
      )}
      {current && (
        <>
          <h4>Current page</h4>
          <p className="current-page" title={current.url}>
            {current.title ?? current.url}
            {current.title && <span className="muted url"> {current.url}</span>}
          </p>
        </>
      )}
      {earlier.length > 0 && (
        <>
          <h4>Pages seen before</h4>
          <ol className="pages">
            {earlier.map((p, i) => (
              <li key={i} title={p.url}>
                {p.title ?? p.url}
              </li>
            ))}
          </ol>
        </>
      )}
      {v.conversations.some((c) => c.id !== conversationId) && (
        <>
          <h4>Other conversations</h4>
          <ul className="pages">
            {v.conversations
              .filter((c) => c.id !== conversationId)
              .map((c) => (
                <li key={c.id}>
                  <Link to={`../${c.id}`} relative="path">
                    {c.last_message_at ? new Date(c.last_message_at).toLocaleDateString() : 'No message'} · {c.status}
                  </Link>
                </li>
              ))}
          </ul>
        </>
      )}
    </aside>
  );
}
