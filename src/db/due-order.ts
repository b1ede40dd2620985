import { sql } from 'kysely';
import type { Tx } from './database.ts';

/**
 * Runs a queue's claim (`order by next_attempt_at limit n for update skip locked`) with sorting priced out
 * of the planner, so that it walks the due index in order and stops after n rows.
 *
 * Left to its statistics, the planner sorts: a queue table that grew since it was last analyzed (a
 * backlog after a quiet spell, a fresh database) looks small, and reading every due row, sorting and
 * keeping n then costs less on paper than walking the index. In fact every claim then read the whole
 * backlog, and its cost per delivery grew with the backlog where the index order's stays flat (npm run
 * bench:webhook-claims, designs Cs-stale and C-stale). A sort is still made where nothing else can answer (enable_sort only
 * prices it high).
 */
export async function inDueOrder<T>(trx: Tx, claim: () => Promise<T>): Promise<T> {
  const { rows } = await sql<{ was: string }>`select current_setting('enable_sort') as was, set_config('enable_sort', 'off', true)`.execute(trx);
  const claimed = await claim();
  // Not in a finally: after a statement the server refused, the transaction accepts nothing but its
  // rollback, which undoes the setting anyway (every claim runs alone in its transaction).
  await sql`select set_config('enable_sort', ${rows[0]!.was}, true)`.execute(trx);
  return claimed;
}
