import type { RoutingMode } from '../db/schema.ts';

export interface Candidate {
  user_id: string;
  /** Open conversations the member takes at most; null is no limit. */
  capacity: number | null;
  /** Assigned conversations not closed. */
  load: number;
  last_assigned_at: Date | null;
}

const hasRoom = (c: Candidate) => c.capacity === null || c.load < c.capacity;

/**
 * Who gets the next conversation among available candidates (already online), or null for nobody.
 * least_loaded: the fewest open conversations, ties to whoever waited longest since their last assignment
 * (never assigned first), then by id. round_robin: the first with room after `last` in id order, wrapping.
 */
export function pick(mode: Exclude<RoutingMode, 'manual'>, candidates: readonly Candidate[], last: string | null): string | null {
  const eligible = candidates.filter(hasRoom);
  if (eligible.length === 0) return null;
  if (mode === 'least_loaded') {
    const waited = (c: Candidate) => c.last_assigned_at?.getTime() ?? Number.NEGATIVE_INFINITY;
    const best = [...eligible].sort((a, b) => a.load - b.load || waited(a) - waited(b) || (a.user_id < b.user_id ? -1 : a.user_id > b.user_id ? 1 : 0))[0]!;
    return best.user_id;
  }
  const ordered = [...eligible].sort((a, b) => (a.user_id < b.user_id ? -1 : a.user_id > b.user_id ? 1 : 0));
  return (last === null ? undefined : ordered.find((c) => c.user_id > last))?.user_id ?? ordered[0]!.user_id;
}
