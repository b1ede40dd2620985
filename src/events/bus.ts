import type { StoredEvent } from './outbox.ts';

export type EventListener = (events: StoredEvent[]) => void;

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

  publish(events: StoredEvent[]): void {
    if (events.length === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener(events);
      } catch {
        // A broken listener must not turn a committed change into an error for its caller.
      }
    }
  }
}
