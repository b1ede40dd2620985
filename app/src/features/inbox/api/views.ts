import { useQuery } from '@tanstack/react-query';
import { $api, session } from '../../../lib/api.ts';
import type { ListQuery } from '../../../lib/cache.ts';

export interface View {
  id: string;
  label: string;
  query: ListQuery;
  /** Counted in the navigation (a closed pile is not a to-do). */
  counted: boolean;
}

// The contract's `open` is a conversation waiting with nobody assigned; `assigned`, one a member handles.
// A snoozed conversation is set aside: out of the to-do views until it comes back, in Snoozed meanwhile.
export const VIEWS: View[] = [
  { id: 'mine', label: 'Mine', query: { status: 'assigned', assigned_to: 'me', snoozed: false, limit: 50 }, counted: true },
  { id: 'unassigned', label: 'Unassigned', query: { status: 'open', snoozed: false, limit: 50 }, counted: true },
  { id: 'assigned', label: 'All assigned', query: { status: 'assigned', snoozed: false, limit: 50 }, counted: true },
  { id: 'snoozed', label: 'Snoozed', query: { snoozed: true, limit: 50 }, counted: false },
  { id: 'closed', label: 'Closed', query: { status: 'closed', limit: 50 }, counted: false },
];

export const viewOf = (id: string | undefined, more: View[] = []): View => [...VIEWS, ...more].find((v) => v.id === id) ?? VIEWS[0]!;

/** One view per department the member belongs to: what waits there, unassigned. */
export function useDepartmentViews(): View[] {
  const departments = useQuery($api.queryOptions('get', '/v1/departments', {}, { staleTime: 300_000 }));
  const me = session.userId;
  return (departments.data?.data ?? [])
    .filter((d) => me && d.member_ids.includes(me))
    .map((d) => ({ id: `dept-${d.id}`, label: d.name, query: { status: 'open', department_id: d.id, snoozed: false, limit: 50 }, counted: true }));
}
