import { randomUUID } from 'node:crypto';
import type { EventEnvelope } from '../events/outbox.ts';
import type { RedisLink, Subscriber } from '../redis/link.ts';

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

type Handlers = { onNotify: (tenantId: string) => void; onLive: (signal: LiveSignal) => void; onMissed?: () => void };

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
  /**
   * Resolves once the handlers hear other instances too. `onMissed`: notifications may have been lost (the
   * connection that hears them was away, or is): every tenant's feed is to be read, whatever it was told.
   */
  subscribe(handlers: Handlers): Promise<void>;
  close(): Promise<void>;
}

export class LocalFanout implements Fanout {
  readonly local = true;
  #handlers: Handlers | undefined;

  notify(tenantIds: string[]) {
    for (const id of tenantIds) queueMicrotask(() => this.#handlers?.onNotify(id));
  }

  notifyOthers() {}

  live(signal: LiveSignal) {
    queueMicrotask(() => this.#handlers?.onLive(signal));
  }

  async subscribe(handlers: Handlers) {
    this.#handlers = handlers;
  }

  async close() {}
}

const CHANNEL = 'chat:realtime';
/** Tenants whose news could not be published, kept to publish when Redis is back. */
const MAX_UNSENT_TENANTS = 100_000;

/**
 * Every instance publishes and listens on one Redis channel. What an instance publishes it hears at once,
 * in process, and not again from Redis: its own streams start their read (or its own sockets get the live
 * signal) while the answer to the request that caused it is being written, not a Redis round trip later,
 * and with Redis away they still do.
 */
export class RedisFanout implements Fanout {
  readonly local = false;
  readonly #link: RedisLink;
  readonly #subscriber: Subscriber;
  readonly #pollMs: number;
  /** Tags this instance's messages, so that it can tell its own echo from another instance's news. */
  readonly #origin = randomUUID();
  readonly #unsent = new Set<string>();
  #handlers: Handlers | undefined;
  #stopPolling: (() => void) | undefined;

  private constructor(link: RedisLink, subscriber: Subscriber, pollMs: number) {
    this.#link = link;
    this.#subscriber = subscriber;
    this.#pollMs = pollMs;
    link.onAvailable(() => this.#flush());
  }

  /**
   * `pollMs`: while the subscribed connection is away, how often every stream of this instance reads its
   * feed instead of waiting for a notification that cannot come.
   */
  static async create(link: RedisLink, options: { pollMs: number; onError?: (err: unknown) => void }): Promise<RedisFanout> {
    // The client reconnects and resubscribes by itself.
    const subscriber = await link.subscriber(options.onError ?? (() => undefined));
    return new RedisFanout(link, subscriber, options.pollMs);
  }

  notify(tenantIds: string[]) {
    if (tenantIds.length === 0) return;
    for (const id of tenantIds) queueMicrotask(() => this.#handlers?.onNotify(id));
    this.notifyOthers(tenantIds);
  }

  notifyOthers(tenantIds: string[]) {
    if (tenantIds.length === 0) return;
    void this.#link.run((c) => c.publish(CHANNEL, JSON.stringify({ from: this.#origin, notify: tenantIds }))).catch(() => {
      // Published when Redis is back: an instance that heard nothing meanwhile reads its feeds anyway, but
      // one whose own connection never dropped would otherwise not know.
      for (const id of tenantIds) if (this.#unsent.size < MAX_UNSENT_TENANTS) this.#unsent.add(id);
    });
  }

  #flush(): void {
    if (this.#unsent.size === 0) return;
    const tenantIds = [...this.#unsent];
    this.#unsent.clear();
    this.notifyOthers(tenantIds);
  }

  live(signal: LiveSignal) {
    queueMicrotask(() => this.#handlers?.onLive(signal));
    // A live signal lost while Redis is away stays lost: it is not stored, and the next one replaces it.
    void this.#link.run((c) => c.publish(CHANNEL, JSON.stringify({ from: this.#origin, live: signal }))).catch(() => undefined);
  }

  async subscribe(handlers: Handlers): Promise<void> {
    this.#handlers = handlers;
    await this.#subscriber.connection.subscribe(CHANNEL, (raw) => {
      const message = JSON.parse(raw) as { from?: string; notify?: string[]; live?: LiveSignal };
      if (message.from === this.#origin) return;
      for (const id of message.notify ?? []) handlers.onNotify(id);
      if (message.live) handlers.onLive(message.live);
    });
    const missed = handlers.onMissed;
    if (missed) this.#stopPolling = this.#subscriber.whileDeaf(this.#pollMs, missed);
  }

  async close() {
    this.#stopPolling?.();
    await this.#subscriber.close();
  }
}
