import { sql } from 'kysely';
import { dbFromNow } from '../db/clock.ts';
import type { Tx } from '../db/database.ts';

// Times come from the database's clock, never an instance's: instances whose clocks disagree still
// agree on which job is due and whose lease has run out.

/** Makes the rows of jobs not seen before, due at once; a known job keeps its persisted next run. */
export async function ensureJobs(trx: Tx, names: string[]) {
  if (names.length === 0) return;
  await trx
    .insertInto('scheduled_jobs')
    .values(names.map((name) => ({ name, next_run_at: sql<Date>`now()` })))
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/**
 * Claims every due job among names that no instance holds, for leaseMs. Of two instances claiming at
 * once, the second waits for the first's row lock, then finds the lease taken and claims nothing.
 */
export async function claimDueJobs(trx: Tx, names: string[], lockToken: string, leaseMs: number): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await trx
    .updateTable('scheduled_jobs')
    .set({
      locked_until: dbFromNow(leaseMs),
      lock_token: lockToken,
      last_started_at: sql<Date>`now()`,
    })
    .where('name', 'in', names)
    .where('next_run_at', '<=', sql<Date>`now()`)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', sql<Date>`now()`)]))
    .returning('name')
    .execute();
  return rows.map((r) => r.name);
}

/**
 * Releases a job this instance claimed and sets its next run. Nothing changes if the lease ran out and
 * another instance claimed the job meanwhile (the token differs): that instance decides the next run.
 */
export async function finishJob(trx: Tx, name: string, lockToken: string, nextRunInMs: number, error: string | null) {
  await trx
    .updateTable('scheduled_jobs')
    .set({
      locked_until: null,
      lock_token: null,
      next_run_at: dbFromNow(nextRunInMs),
      last_finished_at: sql<Date>`now()`,
      last_error: error,
    })
    .where('name', '=', name)
    .where('lock_token', '=', lockToken)
    .execute();
}

export async function findJob(trx: Tx, name: string) {
  return trx.selectFrom('scheduled_jobs').selectAll().where('name', '=', name).executeTakeFirst();
}
