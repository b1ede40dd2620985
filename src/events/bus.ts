import type { FeedHandoff, StoredEvent } from './outbox.ts';

/** `handoff`: the same events as the feed holds them, where the database allows it (outbox.ts). */
export type EventListener = (events: StoredEvent[], handoff?: FeedHandoff) => void;

/**
 * In-process publication of committed events. The realtime gateway subscribes here; across instances it
 * is fed from Redis. A listener that throws never affects the request that made the events.
 */
export class EventBus {
  readonly #listeners = new Map<EventListener, ((tenantId: string) => boolean) | undefined>();

  /** `wantsHandoff`: whether this listener would take a tenant's events as the feed holds them. */
  subscribe(listener: EventListener, options: { wantsHandoff?: (tenantId: string) => boolean } = {}): () => void {
    this.#listeners.set(listener, options.wantsHandoff);
    return () => this.#listeners.delete(listener);
  }

  /** Whether a writer of this tenant's events should find out how the feed will hold them (src/events/outbox.ts). */
  wantsHandoff(tenantId: string): boolean {
    for (const wants of this.#listeners.values()) if (wants?.(tenantId)) return true;
    return false;
  }

  /** Event writers of each tenant running on this instance. */
  readonly #writing = new Map<string, number>();

  /**
   * A writer of the tenant's events begins (src/events/outbox.ts). `handoff`: it should find out how the
   * feed will hold its events: a listener wants them, and no other writer of the tenant runs here. Beside
   * one, its place in the feed is seldom final (a writer with a lower id still runs), and finding out costs
   * PostgreSQL a look at its lock table: ten senders of one tenant doubled the database's work per message.
   * `end` once it has committed or failed.
   */
  beginWrite(tenantId: string): { handoff: boolean; end: () => void } {
    const others = this.#writing.get(tenantId) ?? 0;
    // Asked before the count goes up: a listener that throws leaves no writer counted for ever.
    const handoff = others === 0 && this.wantsHandoff(tenantId);
    this.#writing.set(tenantId, others + 1);
    let ended = false;
    return {
      handoff,
      end: () => {
        if (ended) return;
        ended = true;
        const left = (this.#writing.get(tenantId) ?? 1) - 1;
        if (left > 0) this.#writing.set(tenantId, left);
        else this.#writing.delete(tenantId);
      },
    };
  }

  publish(events: StoredEvent[], handoff?: FeedHandoff): void {
    if (events.length === 0) return;
    for (const listener of this.#listeners.keys()) {
      try {
        listener(events, handoff);
      } catch {
        // A broken listener must not turn a committed change into an error for its caller.
      }
    }
  }
}
