import type { RedisClientType } from 'redis';
import type { EventEnvelope } from '../events/outbox.ts';

/** A live signal (presence, typing, visitor online/offline): delivered to sockets, never stored. */
export interface LiveSignal {
  tenantId: string;
  envelope: Omit<EventEnvelope, 'id' | 'type' | 'data'> & { type: string; data: unknown };
  toMembers: boolean;
  /** Also this visitor's sockets, with visitorData in place of data (no names). */
  toVisitorId?: string;
  visitorData?: unknown;
  /** Not back to the connection it came from. */
  exceptConnectionId?: string;
}

/**
 * Carries "this tenant has new stored events" and live signals to every instance. Stored events are
 * not carried: each instance reads them from the outbox in commit-safe order.
 */
export interface Fanout {
  /** Only this process hears what is notified: no other instance has streams to wake. */
  readonly local: boolean;
  notify(tenantIds: string[]): void;
  live(signal: LiveSignal): void;
  subscribe(handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void }): void;
  close(): Promise<void>;
}

export class LocalFanout implements Fanout {
  readonly local = true;
  #handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void } | undefined;

  notify(tenantIds: string[]) {
    for (const id of tenantIds) queueMicrotask(() => this.#handlers?.onNotify(id));
  }

  live(signal: LiveSignal) {
    queueMicrotask(() => this.#handlers?.onLive(signal));
  }

  subscribe(handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void }) {
    this.#handlers = handlers;
  }

  async close() {}
}

const CHANNEL = 'chat:realtime';

/** Every instance publishes and listens on one Redis channel (its own messages included). */
export class RedisFanout implements Fanout {
  readonly local = false;
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;

  private constructor(publisher: RedisClientType, subscriber: RedisClientType) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
  }

  static async create(redis: RedisClientType, onError: (err: Error) => void = () => undefined): Promise<RedisFanout> {
    const subscriber = redis.duplicate() as RedisClientType;
    // A duplicate does not inherit listeners: an unheard 'error' (Redis restarting) would end the process.
    // The client reconnects and resubscribes by itself.
    subscriber.on('error', onError);
    await subscriber.connect();
    return new RedisFanout(redis, subscriber);
  }

  notify(tenantIds: string[]) {
    if (tenantIds.length > 0) void this.#publisher.publish(CHANNEL, JSON.stringify({ notify: tenantIds })).catch(() => undefined);
  }

  live(signal: LiveSignal) {
    void this.#publisher.publish(CHANNEL, JSON.stringify({ live: signal })).catch(() => undefined);
  }

  subscribe(handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void }) {
    void this.#subscriber.subscribe(CHANNEL, (raw) => {
      const message = JSON.parse(raw) as { notify?: string[]; live?: LiveSignal };
      for (const id of message.notify ?? []) handlers.onNotify(id);
      if (message.live) handlers.onLive(message.live);
    });
  }

  async close() {
    await this.#subscriber.quit().catch(() => undefined);
  }
}
