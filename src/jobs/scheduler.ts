import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import * as repo from './scheduler.repository.ts';

/** A named periodic job. Its name keys its row in scheduled_jobs, so it must stay stable across releases. */
export interface Job {
  name: string;
  /** Time from the end of one run (success or failure) to the next. */
  intervalMs: number;
  /**
   * The work. It gets the database, not a transaction: a job that touches many rows commits in
   * batches. The signal aborts on shutdown; a long job checks it between batches.
   */
  run(database: Database, signal: AbortSignal): Promise<unknown>;
}

export type JobRun = { name: string; ok: true; result: unknown } | { name: string; ok: false; error: unknown };

export interface SchedulerOptions {
  database: Database;
  logger: Logger;
  jobs: Job[];
  /** How often this instance looks for due jobs. */
  tickMs?: number;
  /** How long a claimed run holds its job; past it (the instance died) another instance may run it. */
  leaseMs?: number;
}

export const DEFAULT_TICK_MS = 30_000;
export const DEFAULT_LEASE_MS = 15 * 60_000;

/**
 * Runs each job at most once at a time across every instance on the database: a run first claims the
 * job's row (due, and no live lease), and when it ends, success or failure, it sets the next run, which
 * therefore survives restarts. The timer never keeps the process alive; stop() waits for runs in flight.
 */
export class Scheduler {
  readonly #database: Database;
  readonly #logger: Logger;
  readonly #jobs: Map<string, Job>;
  readonly #tickMs: number;
  readonly #leaseMs: number;
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #pending: Promise<JobRun[]> | undefined;
  #known = false;

  constructor(options: SchedulerOptions) {
    this.#database = options.database;
    this.#logger = options.logger;
    this.#jobs = new Map();
    for (const job of options.jobs) {
      if (this.#jobs.has(job.name)) throw new Error(`two scheduled jobs are named ${job.name}`);
      if (!(job.intervalMs > 0)) throw new Error(`scheduled job ${job.name} needs a positive interval`);
      this.#jobs.set(job.name, job);
    }
    this.#tickMs = options.tickMs ?? DEFAULT_TICK_MS;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /**
   * Looks for due jobs every tickMs, the first time one tick after the start: the embedded database
   * runs on the event loop, and a service just started serves its first requests before housekeeping.
   */
  start(): void {
    if (this.#timer || this.#abort.signal.aborted) return;
    this.#timer = setInterval(() => this.#tick(), this.#tickMs);
    this.#timer.unref();
  }

  /**
   * Runs the jobs that are due and that no instance holds, and answers what ran. Calls on one instance
   * queue behind each other; the timer skips a tick while one is running.
   */
  runDue(): Promise<JobRun[]> {
    const previous = this.#pending ?? Promise.resolve([]);
    const run = previous.catch(() => []).then(() => this.#runDue());
    this.#pending = run;
    const clear = () => {
      if (this.#pending === run) this.#pending = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  /** No new runs; aborts the signal of runs in flight and waits for them to end. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#abort.abort();
    await this.#pending?.catch(() => undefined);
  }

  #tick(): void {
    if (this.#pending) return;
    // A failed claim (the database away) is logged; the next tick tries again.
    this.runDue().catch((err: unknown) => this.#logger.error({ err }, 'scheduler could not claim its jobs'));
  }

  async #runDue(): Promise<JobRun[]> {
    if (this.#abort.signal.aborted) return [];
    const names = [...this.#jobs.keys()];
    const lockToken = randomUUID();
    const claimed = await this.#database.asSystem(async (trx) => {
      if (!this.#known) await repo.ensureJobs(trx, names);
      return repo.claimDueJobs(trx, names, lockToken, this.#leaseMs);
    });
    this.#known = true;
    return Promise.all(claimed.map((name) => this.#run(this.#jobs.get(name)!, lockToken)));
  }

  async #run(job: Job, lockToken: string): Promise<JobRun> {
    const started = performance.now();
    let outcome: JobRun;
    try {
      const result = await job.run(this.#database, this.#abort.signal);
      outcome = { name: job.name, ok: true, result };
      this.#logger.info({ job: job.name, result, ms: Math.round(performance.now() - started) }, 'scheduled job ran');
    } catch (error) {
      outcome = { name: job.name, ok: false, error };
      this.#logger.error({ err: error, job: job.name }, 'scheduled job failed; it runs again at its next interval');
    }
    const message = outcome.ok ? null : String(outcome.error instanceof Error ? outcome.error.message : outcome.error).slice(0, 2000);
    try {
      await this.#database.asSystem((trx) => repo.finishJob(trx, job.name, lockToken, job.intervalMs, message));
    } catch (err) {
      // The lease still runs out, so the job is not lost: it runs again once the lease has passed.
      this.#logger.error({ err, job: job.name }, 'scheduled job could not record its run');
    }
    return outcome;
  }
}
