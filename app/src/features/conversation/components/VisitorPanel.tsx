import { useQuery } from '@tanstack/react-query';
import { $api } from '../../../lib/api.ts';

/** Who the visitor is: contact details, the pages they saw, their earlier conversations. */
export function VisitorPanel({ visitorId }: { visitorId: string }) {
  const visitor = useQuery($api.queryOptions('get', '/v1/visitors/{id}', { params: { path: { id: visitorId } } }));
  const v = visitor.data;
  if (!v) return null;
  return (
    <aside className="visitor-panel" aria-label="Visitor">
      <h3>{v.contact?.name ?? v.name ?? 'Anonymous visitor'}</h3>
      {(v.contact?.email ?? v.email) && <p>{v.contact?.email ?? v.email}</p>}
      {v.recent_pages.length > 0 && (
        <>
          <h4>Pages seen</h4>
          <ol className="pages">
            {v.recent_pages.slice(0, 5).map((p, i) => (
              <li key={i} title={p.url}>
                {p.title ?? p.url}
              </li>
            ))}
          </ol>
        </>
      )}
      {v.conversations.length > 1 && <p className="muted">{v.conversations.length - 1} earlier conversation(s)</p>}
    </aside>
  );
}
