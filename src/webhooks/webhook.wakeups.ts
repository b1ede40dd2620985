import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import type { EventBus } from '../events/bus.ts';

const CHANNEL = 'chat:webhooks:wake';

/**
 * Tells the dispatchers of every other instance that events were committed, so that they read them now
 * instead of at their next poll. Only the fact travels: each dispatcher reads the events from the feed.
 * Announcements made within one turn of the event loop go out as one message.
 */
export class RedisDispatchWakeups {
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;
  /** This instance's messages come back to it: they are recognised and dropped (its bus told it already). */
  readonly #instance = randomUUID();
  readonly #listeners = new Set<() => void>();
  #pending = false;

  private constructor(publisher: RedisClientType, subscriber: RedisClientType) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
  }

  static async create(redis: RedisClientType, onError: (err: unknown) => void = () => undefined): Promise<RedisDispatchWakeups> {
    const subscriber = redis.duplicate() as RedisClientType;
    // A duplicate does not inherit listeners: an unheard 'error' (Redis restarting) would end the process.
    subscriber.on('error', onError);
    await subscriber.connect();
    const wakeups = new RedisDispatchWakeups(redis, subscriber);
    await subscriber.subscribe(CHANNEL, (from) => {
      if (from === wakeups.#instance) return;
      for (const listener of wakeups.#listeners) listener();
    });
    return wakeups;
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
      // Lost announcements cost only latency: the dispatchers' polls still find the events.
      void this.#publisher.publish(CHANNEL, this.#instance).catch(() => undefined);
    });
  }

  /** Calls listener whenever another instance announces; answers how to stop. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await this.#subscriber.quit().catch(() => undefined);
  }
}
