import type { StoredEvent } from './outbox.ts';

/**
 * Which tenants a reader of the feed has work for (an enabled webhook, an enabled workflow, a bot), so that
 * a commit of any other tenant does not cost it a read of the feed: before, every message sent made the
 * webhook dispatcher, the workflow runner and the bot runner each run a transaction to find nothing to do.
 *
 * Only wakes are filtered: this instance's commits, other instances' (src/events/wakeups.ts, which name
 * their tenants), and the quick look again at events a running writer held back. A reader still reads from
 * its cursor at every poll and then takes every event, so nothing is ever skipped: an event of a tenant the
 * set missed waits at most one poll. The set is reloaded every `refreshMs`, and at once after a change made
 * through this instance (`changed()`, called after the change committed); until a load has answered, every
 * tenant counts.
 */
export class TenantInterest {
  readonly #load: () => Promise<string[]>;
  readonly #refreshMs: number;
  readonly #onError: (err: unknown) => void;
  #tenants: Set<string> | undefined;
  /** Bumped by every change: a load that began before it must not install what it read. */
  #generation = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Loads under way: stop() waits for them, so that none runs into the database's close. */
  readonly #loading = new Set<Promise<void>>();

  constructor(load: () => Promise<string[]>, options: { refreshMs?: number; onError?: (err: unknown) => void } = {}) {
    this.#load = load;
    this.#refreshMs = options.refreshMs ?? 5000;
    this.#onError = options.onError ?? (() => undefined);
  }

  start(): void {
    if (this.#timer) return;
    this.#stopped = false;
    void this.#reload();
    this.#timer = setInterval(() => void this.#reload(), this.#refreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.all(this.#loading);
  }

  /** Whether any of these events may be work: true while the set is not known. */
  covers(events: StoredEvent[]): boolean {
    const tenants = this.#tenants;
    if (!tenants) return true;
    return events.some((e) => tenants.has(e.envelope.tenant_id));
  }

  /** Whether events of any of these tenants may be work: true while the set is not known. */
  coversTenants(tenantIds: readonly string[]): boolean {
    const tenants = this.#tenants;
    if (!tenants) return true;
    return tenantIds.some((id) => tenants.has(id));
  }

  /** A change committed through this instance: every tenant counts until the set is read again. */
  changed(): void {
    this.#generation++;
    this.#tenants = undefined;
    void this.#reload();
  }

  #reload(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const loading = this.#read().finally(() => this.#loading.delete(loading));
    this.#loading.add(loading);
    return loading;
  }

  async #read(): Promise<void> {
    const generation = this.#generation;
    try {
      const tenants = new Set(await this.#load());
      if (generation === this.#generation) this.#tenants = tenants;
    } catch (err) {
      // The database is away: every tenant counts until a load answers.
      if (generation === this.#generation) this.#tenants = undefined;
      this.#onError(err);
    }
  }
}
