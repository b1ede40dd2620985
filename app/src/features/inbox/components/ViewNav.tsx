import { useQueries } from '@tanstack/react-query';
import { NavLink } from 'react-router';
import { listOptions } from '../api/queries.ts';
import { useDepartmentViews, type View, VIEWS } from '../api/views.ts';

/** The views, each with how many conversations it holds (exact: the API keeps these counts). */
export function ViewNav() {
  const departments = useDepartmentViews();
  return (
    <nav className="views" aria-label="Conversation views">
      <Views views={VIEWS} />
      {departments.length > 0 && (
        <>
          <h2 id="my-departments">My departments</h2>
          <Views views={departments} labelledBy="my-departments" />
        </>
      )}
    </nav>
  );
}

function Views({ views, labelledBy }: { views: View[]; labelledBy?: string }) {
  const lists = useQueries({ queries: views.map((v) => listOptions(v)) });
  return (
    <ul aria-labelledby={labelledBy}>
      {views.map((view, i) => {
        const total = lists[i]?.data?.pagination.total;
        return (
          <li key={view.id}>
            <NavLink to={`/inbox/${view.id}`}>
              <span>{view.label}</span>
              {total !== undefined && view.counted && (
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
  );
}
