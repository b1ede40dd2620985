import { useInfiniteQuery } from '@tanstack/react-query';
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
  return (
    <ul aria-labelledby={labelledBy}>
      {views.map((view) => (
        <ViewLink key={view.id} view={view} />
      ))}
    </ul>
  );
}

/** A view's link with its count: the first page of its list (the same query the list shows) says the total. */
function ViewLink({ view }: { view: View }) {
  const list = useInfiniteQuery(listOptions(view));
  const total = list.data?.pages[0]?.pagination.total;
  return (
    <li>
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
}
