import { randomUUID } from 'node:crypto';
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
  /** Tells only the other instances: this one's streams were given the events (a handoff). */
  notifyOthers(tenantIds: string[]): void;
  live(signal: LiveSignal): void;
  /** Resolves once the handlers hear other instances too. */
  subscribe(handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void }): Promise<void>;
  close(): Promise<void>;
}

export class LocalFanout implements Fanout {
  readonly local = true;
  #handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void } | undefined;

  notify(tenantIds: string[]) {
    for (const id of tenantIds) queueMicrotask(() => this.#handlers?.onNotify(id));
  }

  notifyOthers() {}

  live(signal: LiveSignal) {
    queueMicrotask(() => this.#handlers?.onLive(signal));
  }

  async subscribe(handlers: { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void }) {
    this.#handlers = handlers;
  }

  async close() {}
}

const CHANNEL = 'chat:realtime';

type Handlers = { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void };

/**
 * Every instance publishes and listens on one Redis channel. What an instance publishes it hears at once,
 * in process, and not again from Redis: its own streams start their read (or its own sockets get the live
 * signal) while the answer to the request that caused it is being written, not a Redis round trip later,
 * and with Redis away they still do.
 */
export class RedisFanout implements Fanout {
  readonly local = false;
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;
  /** Tags this instance's messages, so that it can tell its own echo from another instance's news. */
  readonly #origin = randomUUID();
  #handlers: Handlers | undefined;

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
    if (tenantIds.length === 0) return;
    for (const id of tenantIds) queueMicrotask(() => this.#handlers?.onNotify(id));
    this.notifyOthers(tenantIds);
  }

  notifyOthers(tenantIds: string[]) {
    if (tenantIds.length === 0) return;
    void this.#publisher.publish(CHANNEL, JSON.stringify({ from: this.#origin, notify: tenantIds })).catch(() => undefined);
  }

  live(signal: LiveSignal) {
    queueMicrotask(() => this.#handlers?.onLive(signal));
    void this.#publisher.publish(CHANNEL, JSON.stringify({ from: this.#origin, live: signal })).catch(() => undefined);
  }

  subscribe(handlers: Handlers): Promise<void> {
    this.#handlers = handlers;
    return this.#subscriber.subscribe(CHANNEL, (raw) => {
      const message = JSON.parse(raw) as { from?: string; notify?: string[]; live?: LiveSignal };
      if (message.from === this.#origin) return;
      for (const id of message.notify ?? []) handlers.onNotify(id);
      if (message.live) handlers.onLive(message.live);
    });
  }

  async close() {
    await this.#subscriber.quit().catch(() => undefined);
  }
}
