import type { Tx } from '../db/database.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { ClaimLoop } from './claim-loop.ts';
import { consumerDeps, FeedConsumer, type FeedConsumerOptions } from './feed-consumer.ts';
import type { FeedRow } from './feed.repository.ts';
import { queueStats, type WorkedTable } from './queue.repository.ts';

/** How a queue of the feed is worked on this instance. */
export interface QueueSettings {
  /** Attempts in flight at most. */
  concurrency: number;
  /** How often the feed is read without a wake (due retries, news nobody announced). */
  pollMs: number;
  /** How long a claimed row is this instance's before another may take it. */
  leaseMs: number;
  /** Events read per pass. */
  batch: number;
}

/** What a consumer of the feed is given: where it reads, what wakes it, and any of its queue's settings. */
export interface QueueConsumerOptions extends Pick<FeedConsumerOptions, 'database' | 'logger' | 'bus' | 'interest' | 'wakeups'>, Partial<QueueSettings> {}

/** The settings given, the queue's defaults for the rest. */
export const queueSettings = (given: Partial<QueueSettings>, defaults: QueueSettings): QueueSettings => ({
  concurrency: given.concurrency ?? defaults.concurrency,
  pollMs: given.pollMs ?? defaults.pollMs,
  leaseMs: given.leaseMs ?? defaults.leaseMs,
  batch: given.batch ?? defaults.batch,
});

export type FeedQueueOptions = Pick<FeedConsumerOptions, 'database' | 'logger' | 'bus' | 'interest' | 'wakeups' | 'cursor' | 'label'> & QueueSettings;

/**
 * A queue that the feed fills and this instance works (bot deliveries, workflow runs): a FeedConsumer
 * turns events into rows, a ClaimLoop claims the due rows into the free slots and attempts them. A
 * consumer extends it with its fan-out, its claim and its attempt; the reading, claiming, waking and
 * stopping are here.
 */
export abstract class FeedQueue<T> {
  readonly #feed: FeedConsumer;
  readonly #loop: ClaimLoop<T>;
  #stopped = false;

  constructor(o: FeedQueueOptions) {
    const { database, leaseMs } = o;
    // The callbacks reach the subclass's methods once it is built: nothing runs before start().
    this.#loop = new ClaimLoop<T>({
      label: `${o.label} queue`,
      logger: o.logger,
      concurrency: o.concurrency,
      claim: (free, token) => database.asSystem((trx) => this.claim(trx, free, token, leaseMs)),
      attempt: (item, token) => this.attempt(item, token),
      logContext: (item) => this.logContext(item),
    });
    this.#feed = new FeedConsumer({
      ...consumerDeps(o),
      cursor: o.cursor,
      label: o.label,
      pollMs: o.pollMs,
      batch: o.batch,
      fanOut: (trx, rows) => this.fanOut(trx, rows),
      send: () => this.#loop.wake(),
    });
  }

  /** Queues the rows a page of events makes, in the pass's transaction; answers how many. */
  protected abstract fanOut(trx: Tx, rows: FeedRow[]): Promise<number>;
  /** Claims up to `free` due rows under the token, with a lease of leaseMs, in the transaction. */
  protected abstract claim(trx: Tx, free: number, token: string, leaseMs: number): Promise<T[]>;
  /** Attempts one and records its outcome under the token. */
  protected abstract attempt(item: T, token: string): Promise<void>;
  /** What names a row in the log. */
  protected abstract logContext(item: T): Record<string, unknown>;

  /** Listens for commits (this instance's, and others' through wake-ups) and polls. */
  start(): void {
    if (!this.#stopped) this.#feed.start();
  }

  /** Reads new events and attempts what is due. */
  wake(): void {
    this.#feed.wake();
  }

  /** One fan-out transaction, not woken by anything (tests). */
  readOnce(): ReturnType<FeedConsumer['readOnce']> {
    return this.#feed.readOnce();
  }

  /** Reads and claims no more; resolves when the attempts in flight have ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#feed.stop();
    await this.#loop.stop();
  }
}

/**
 * Registers a worked queue's gauges (every tenant's rows, read as the system role): its pending rows by
 * state, and how long the oldest due one has waited. `rows` and `row` name them in the help texts.
 */
export function observeQueueDepth(
  metrics: Metrics,
  database: FeedQueueOptions['database'],
  table: WorkedTable,
  names: { pending: string; oldestDue: string; rows: string; row: string },
): void {
  const rows = names.rows[0]!.toUpperCase() + names.rows.slice(1);
  metrics.observeQueue(
    { name: names.pending, help: `${rows} waiting, by state: due (now, in flight included), scheduled (a retry later)` },
    { name: names.oldestDue, help: `How long the oldest due ${names.row} has waited (0: none due)` },
    async () => {
      const s = await database.asSystem((trx) => queueStats(trx, table));
      return { states: { due: s.due, scheduled: s.scheduled }, oldestDueSeconds: s.oldest_due_seconds };
    },
  );
}
