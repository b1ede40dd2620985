import { useQueries } from '@tanstack/react-query';
import { NavLink } from 'react-router';
import { listOptions } from '../api/queries.ts';
import { VIEWS } from '../api/views.ts';

/** The views, each with how many conversations it holds (exact: the API keeps these counts). */
export function ViewNav() {
  const lists = useQueries({ queries: VIEWS.map((v) => listOptions(v)) });
  return (
    <nav className="views" aria-label="Conversation views">
      <ul>
        {VIEWS.map((view, i) => {
          const total = lists[i]?.data?.pagination.total;
          return (
            <li key={view.id}>
              <NavLink to={`/inbox/${view.id}`}>
                <span>{view.label}</span>
                {total !== undefined && view.id !== 'closed' && (
                  <span className="count">
                    <span className="visually-hidden">, </span>
                    {total}
                  </span>
                )}
              </NavLink>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
