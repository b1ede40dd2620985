import { randomUUID } from 'node:crypto';
import type { RedisLink, Subscriber } from '../redis/link.ts';
import type { EventBus } from './bus.ts';

const CHANNEL = 'chat:webhooks:wake';

/**
 * Told of a wake-up: the tenants whose events were committed, or undefined when news of any tenant may be
 * waiting (Redis heard again after a gap, an announcement that names none).
 */
export type WakeupListener = (tenantIds: readonly string[] | undefined) => void;

/**
 * What travels: the announcing instance, and the tenants of the commits announced, so that a receiver wakes
 * only the consumers with work for one of them (src/events/tenant-interest.ts). Without `tenants`, every
 * tenant counts: an announcement of news that may have been missed. An instance from before the tenant
 * list sends its id alone, which reads as such an announcement, and reads this one as a wake of everything.
 */
interface Announcement {
  from: string;
  tenants?: string[];
}

function parse(message: string): Announcement {
  if (!message.startsWith('{')) return { from: message };
  try {
    const parsed = JSON.parse(message) as { from?: unknown; tenants?: unknown };
    const tenants = Array.isArray(parsed.tenants) && parsed.tenants.every((t) => typeof t === 'string') ? (parsed.tenants as string[]) : undefined;
    return { from: String(parsed.from), ...(tenants ? { tenants } : {}) };
  } catch {
    // A message this code cannot read may still be news: it wakes everything.
    return { from: '' };
  }
}

/**
 * Tells the feed's consumers (webhooks, workflows, bots) of every other instance that events were
 * committed, and whose, so that those with work for them read them now instead of at their next poll. Only
 * the fact and the tenants travel: each consumer reads the events from the feed. Announcements made within
 * one turn of the event loop go out as one message, with every tenant they named. An announcement lost to
 * a Redis outage costs latency only, and not even that: one that could not be sent goes out when Redis is
 * back (naming no tenant: it stands for all that were lost), and an instance that could not hear wakes
 * all its consumers as soon as it hears again.
 */
export class RedisFeedWakeups {
  readonly #link: RedisLink;
  readonly #subscriber: Subscriber;
  /** This instance's messages come back to it: they are recognised and dropped (its bus told it already). */
  readonly #instance = randomUUID();
  readonly #listeners = new Set<WakeupListener>();
  /** The tenants announced in this turn of the event loop; null: every tenant; undefined: nothing yet. */
  #turn: Set<string> | null | undefined;
  #unsent = false;

  private constructor(link: RedisLink, subscriber: Subscriber) {
    this.#link = link;
    this.#subscriber = subscriber;
    subscriber.onResume(() => this.#wake(undefined));
    link.onAvailable(() => {
      if (!this.#unsent) return;
      this.#unsent = false;
      this.announce();
    });
  }

  static async create(link: RedisLink, onError: (err: unknown) => void = () => undefined): Promise<RedisFeedWakeups> {
    const subscriber = await link.subscriber(onError);
    const wakeups = new RedisFeedWakeups(link, subscriber);
    await subscriber.connection.subscribe(CHANNEL, (message) => {
      const { from, tenants } = parse(message);
      if (from !== wakeups.#instance) wakeups.#wake(tenants);
    });
    return wakeups;
  }

  #wake(tenantIds: readonly string[] | undefined): void {
    for (const listener of this.#listeners) listener(tenantIds);
  }

  /** Announces every commit this instance's bus reports, with its tenant; answers how to stop. */
  relay(bus: EventBus): () => void {
    return bus.subscribe((events) => this.announce(events.map((e) => e.envelope.tenant_id)));
  }

  /** Announces commits of these tenants; without any, news of every tenant. */
  announce(tenantIds?: Iterable<string>): void {
    const scheduled = this.#turn !== undefined;
    if (tenantIds === undefined) this.#turn = null;
    else if (this.#turn !== null) {
      const turn = (this.#turn ??= new Set());
      for (const id of tenantIds) turn.add(id);
    }
    if (scheduled) return;
    setImmediate(() => {
      const turn = this.#turn;
      this.#turn = undefined;
      const announcement: Announcement = turn ? { from: this.#instance, tenants: [...turn] } : { from: this.#instance };
      const message = JSON.stringify(announcement);
      void this.#link.run((c) => c.publish(CHANNEL, message)).catch(() => (this.#unsent = true));
    });
  }

  /**
   * Calls listener whenever another instance announces (with the tenants it names), or news may have been
   * missed (with none); answers how to stop.
   */
  subscribe(listener: WakeupListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await this.#subscriber.close();
  }
}
