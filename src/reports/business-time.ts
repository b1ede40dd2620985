import type { Schedule } from '../hours/schedule.ts';
import { statusAt } from '../hours/schedule.ts';

/**
 * Seconds between two instants that fall within the schedule's open hours (src/hours/schedule.ts: IANA
 * zones through Intl, periods past midnight, overrides, daylight saving). Walks from one change of
 * open/closed to the next, so its cost is the number of changes in between, not the length.
 */
export function openSecondsBetween(schedule: Schedule, from: Date, to: Date): number {
  let t = from.getTime();
  const end = to.getTime();
  let open = 0;
  while (t < end) {
    const status = statusAt(schedule, new Date(t));
    const next = Math.min(status.next_change_at?.getTime() ?? end, end);
    if (status.open) open += next - t;
    // A change that is not after t (never expected) would loop: step past it.
    t = next > t ? next : end;
  }
  return open / 1000;
}
