import { randomUUID } from 'node:crypto';
import type { RedisLink, Subscriber } from '../redis/link.ts';
import type { EventBus } from './bus.ts';

const CHANNEL = 'chat:webhooks:wake';

/**
 * Tells the feed's consumers (webhooks, workflows, bots) of every other instance that events were
 * committed, so that they read them now instead of at their next poll. Only the fact travels: each
 * consumer reads the events from the feed. Announcements made within one turn of the event loop go out
 * as one message. An announcement lost to a Redis outage costs latency only, and not even that: one that
 * could not be sent goes out when Redis is back, and an instance that could not hear wakes its consumers
 * as soon as it hears again.
 */
export class RedisFeedWakeups {
  readonly #link: RedisLink;
  readonly #subscriber: Subscriber;
  /** This instance's messages come back to it: they are recognised and dropped (its bus told it already). */
  readonly #instance = randomUUID();
  readonly #listeners = new Set<() => void>();
  #pending = false;
  #unsent = false;

  private constructor(link: RedisLink, subscriber: Subscriber) {
    this.#link = link;
    this.#subscriber = subscriber;
    subscriber.onResume(() => this.#wake());
    link.onAvailable(() => {
      if (!this.#unsent) return;
      this.#unsent = false;
      this.announce();
    });
  }

  static async create(link: RedisLink, onError: (err: unknown) => void = () => undefined): Promise<RedisFeedWakeups> {
    const subscriber = await link.subscriber(onError);
    const wakeups = new RedisFeedWakeups(link, subscriber);
    await subscriber.connection.subscribe(CHANNEL, (from) => {
      if (from !== wakeups.#instance) wakeups.#wake();
    });
    return wakeups;
  }

  #wake(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Announces every commit this instance's bus reports; answers how to stop. */
  relay(bus: EventBus): () => void {
    return bus.subscribe(() => this.announce());
  }

  announce(): void {
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      void this.#link.run((c) => c.publish(CHANNEL, this.#instance)).catch(() => (this.#unsent = true));
    });
  }

  /** Calls listener whenever another instance announces, or news may have been missed; answers how to stop. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await this.#subscriber.close();
  }
}
