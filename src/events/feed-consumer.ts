import type { Logger } from 'pino';
import type { Database, Tx } from '../db/database.ts';
import type { EventBus } from './bus.ts';
import * as cursors from './feed-cursor.repository.ts';
import { type FeedRow, feedHead, readFeed } from './feed.repository.ts';
import type { TenantInterest } from './tenant-interest.ts';
import type { WakeupListener } from './wakeups.ts';

/** Committed events held back by a writer still running: how soon to look again. */
const HELD_BACK_RETRY_MS = 20;

export interface FeedConsumerOptions {
  /** The consumer's row in feed_cursors. */
  cursor: string;
  database: Database;
  logger: Logger;
  /** Commits of this instance wake the consumer. */
  bus: EventBus;
  /**
   * Only commits of these tenants wake it (src/events/tenant-interest.ts), this instance's or another's, and
   * only their held-back events are looked for again soon; without it, every commit and every held-back
   * event does.
   */
  interest?: TenantInterest | undefined;
  /**
   * Commits of other instances wake it (src/events/wakeups.ts), naming their tenants, and so does a Redis
   * that is back (naming none: news of any tenant may have been missed).
   */
  wakeups?: { subscribe(listener: WakeupListener): () => void } | undefined;
  /** How often it looks without being woken: due retries, and news nobody announced. */
  pollMs: number;
  /** Events read per pass. */
  batch: number;
  /**
   * What the consumer makes of a page of events, in the pass's transaction (the cursor moves past them in
   * the same one, so a crash keeps all of it or none): answers how many deliveries or runs it queued.
   */
  fanOut(trx: Tx, rows: FeedRow[]): Promise<number>;
  /** Sends what is due: after a pass queued something, and at every wake. Never throws. */
  send(): void;
  /** Names the consumer in its logs. */
  label: string;
}

/** What a consumer hands its FeedConsumer from its own options. */
export const consumerDeps = (o: Pick<FeedConsumerOptions, 'database' | 'logger' | 'bus' | 'interest' | 'wakeups'>) => ({
  database: o.database,
  logger: o.logger,
  bus: o.bus,
  interest: o.interest,
  wakeups: o.wakeups,
});

/**
 * One reader of the outbox for a consumer (webhooks, workflows, bots), at least once, on any number of
 * instances: a pass locks the consumer's cursor, reads the next events in commit-safe order, lets the
 * consumer queue its work, and moves the cursor, all in one transaction. Woken by this instance's commits,
 * by other instances' (through Redis), and by a poll; a wake during a pass runs one more pass after it;
 * events held back by a running writer are looked for again shortly. Commits and held-back events of a
 * tenant it has no work for wake it for nothing (its interest), and a pass is a writing transaction: on
 * several instances, every commit would cost each other instance a pass per consumer. The consumer
 * supplies its fan-out and its sending; claiming, attempts and retries stay its own.
 */
export class FeedConsumer {
  readonly #o: FeedConsumerOptions;
  #timer: NodeJS.Timeout | undefined;
  #heldBackTimer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void)[] = [];
  #stopped = false;
  #reading: Promise<void> | undefined;
  #again = false;

  constructor(options: FeedConsumerOptions) {
    this.#o = options;
  }

  /** Listens and polls; the first poll one interval after the start (a service just started serves requests first). */
  start(): void {
    if (this.#timer || this.#stopped) return;
    const { bus, interest, wakeups } = this.#o;
    this.#unsubscribe.push(bus.subscribe((events) => interest?.covers(events) === false || this.wake()));
    // A wake-up that names no tenant (news that may have been missed, or an instance from before the names) wakes it.
    if (wakeups) this.#unsubscribe.push(wakeups.subscribe((tenantIds) => (tenantIds && interest?.coversTenants(tenantIds) === false) || this.wake()));
    this.#timer = setInterval(() => this.wake(), this.#o.pollMs);
    this.#timer.unref();
  }

  /** Reads new events and sends what is due. */
  wake(): void {
    this.#read();
    if (!this.#stopped) this.#o.send();
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Stops listening, polling and reading; resolves when a pass under way has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#heldBackTimer);
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    await this.#reading?.catch(() => undefined);
  }

  #read(): void {
    if (this.#stopped) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    const run = this.#readLoop()
      .catch((err: unknown) => this.#o.logger.error({ err }, `${this.#o.label} fan-out failed; the next poll tries again`))
      .finally(() => {
        if (this.#reading === run) this.#reading = undefined;
      });
    this.#reading = run;
  }

  async #readLoop(): Promise<void> {
    do {
      this.#again = false;
      for (;;) {
        const pass = await this.readOnce();
        if (pass.queued > 0 && !this.#stopped) this.#o.send();
        if (pass.more && !this.#stopped) continue;
        if (pass.heldBack && !this.#stopped) {
          clearTimeout(this.#heldBackTimer);
          this.#heldBackTimer = setTimeout(() => this.#read(), HELD_BACK_RETRY_MS);
        }
        break;
      }
    } while (this.#again && !this.#stopped);
  }

  /**
   * One pass in one transaction. Public for tests and the benchmarks. `heldBack`: a running writer holds
   * back committed events that may be this consumer's work (of a tenant its interest covers, or of tenants
   * not known): look again soon. Held-back events of other tenants wait for the next pass: their commit
   * woke nobody here, and a writer it waits for wakes this consumer when it commits, if its events are work.
   */
  async readOnce(): Promise<{ read: number; queued: number; more: boolean; heldBack: boolean }> {
    const { database, cursor: name, batch } = this.#o;
    const serial = database.kind === 'pglite';
    return database.asSystem(async (trx) => {
      let cursor = await cursors.lockCursor(trx, name);
      if (!cursor) {
        // The first start reads from the head: a consumer acts on what happens after it exists.
        await cursors.ensureCursor(trx, name, await feedHead(trx, undefined, { serial }));
        cursor = (await cursors.lockCursor(trx, name))!;
      }
      const page = await readFeed(trx, { after: cursor, limit: batch, serial });
      const heldBack = page.heldBack && this.#mayBeWork(page.heldBackTenants);
      const last = page.rows.at(-1);
      if (!last) return { read: 0, queued: 0, more: false, heldBack };
      const queued = await this.#o.fanOut(trx, page.rows);
      await cursors.advanceCursor(trx, name, { txid: last.txid, position: last.position });
      return { read: page.rows.length, queued, more: page.rows.length === batch, heldBack };
    });
  }

  /** Whether events of these tenants may be work (every tenant may, when they are not known). */
  #mayBeWork(tenantIds: readonly string[] | undefined): boolean {
    return tenantIds === undefined || this.#o.interest?.coversTenants(tenantIds) !== false;
  }
}
