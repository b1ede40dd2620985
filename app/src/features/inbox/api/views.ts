import type { ListQuery } from '../../../lib/cache.ts';

export interface View {
  id: string;
  label: string;
  query: ListQuery;
}

// The contract's `open` is a conversation waiting with nobody assigned; `assigned`, one a member handles.
export const VIEWS: View[] = [
  { id: 'mine', label: 'Mine', query: { status: 'assigned', assigned_to: 'me', limit: 50 } },
  { id: 'unassigned', label: 'Unassigned', query: { status: 'open', limit: 50 } },
  { id: 'assigned', label: 'All assigned', query: { status: 'assigned', limit: 50 } },
  { id: 'closed', label: 'Closed', query: { status: 'closed', limit: 50 } },
];

export const viewOf = (id: string | undefined): View => VIEWS.find((v) => v.id === id) ?? VIEWS[0]!;
