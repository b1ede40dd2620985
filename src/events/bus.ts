import type { FeedHandoff, StoredEvent } from './outbox.ts';

/** `handoff`: the same events as the feed holds them, where the database allows it (outbox.ts). */
export type EventListener = (events: StoredEvent[], handoff?: FeedHandoff) => void;

/**
 * In-process publication of committed events. The realtime gateway subscribes here; across instances it
 * is fed from Redis. A listener that throws never affects the request that made the events.
 */
export class EventBus {
  readonly #listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  publish(events: StoredEvent[], handoff?: FeedHandoff): void {
    if (events.length === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener(events, handoff);
      } catch {
        // A broken listener must not turn a committed change into an error for its caller.
      }
    }
  }
}
