import { randomUUID } from 'node:crypto';
import type { RedisLink, Subscriber } from '../redis/link.ts';
import type { ActiveMembership } from '../shared/principal.ts';

/**
 * A login that ended (logout, theft, reset), a member whose access changed (role, seat, removal), or an API key
 * whose value stopped working (revoked or rotated).
 */
export type SessionChange = { sessionId: string } | { userId: string; tenantId?: string } | { apiKeyId: string };

/** Carries session changes to every instance (its own included). */
export interface SessionChanges {
  /**
   * Whether changes made on other instances reach this one now. While they may not (Redis away), nothing
   * cached may be trusted: a logout there must still end the login here at once.
   */
  readonly listening: boolean;
  publish(change: SessionChange): void;
  subscribe(listener: (change: SessionChange) => void): void;
  /** Runs when changes may have been missed (hearing again after a gap): everything is to be checked. */
  onGap(listener: () => void): void;
  close(): Promise<void>;
}

export class LocalSessionChanges implements SessionChanges {
  readonly listening = true;
  readonly #listeners: ((change: SessionChange) => void)[] = [];
  publish(change: SessionChange): void {
    for (const listener of this.#listeners) listener(change);
  }
  subscribe(listener: (change: SessionChange) => void): void {
    this.#listeners.push(listener);
  }
  onGap(): void {}
  async close(): Promise<void> {}
}

const CHANNEL = 'chat:sessions';
/** Changes that could not be published, kept to publish when Redis is back (older ones are dropped past it). */
const MAX_UNSENT = 10_000;

export class RedisSessionChanges implements SessionChanges {
  readonly #link: RedisLink;
  readonly #subscriber: Subscriber;
  readonly #listeners: ((change: SessionChange) => void)[] = [];
  readonly #gapListeners: (() => void)[] = [];
  #unsent: string[] = [];
  readonly #origin = randomUUID();

  private constructor(link: RedisLink, subscriber: Subscriber) {
    this.#link = link;
    this.#subscriber = subscriber;
    // Heard again: whatever was published meanwhile is lost, so every instance checks all it trusted.
    subscriber.onResume(() => {
      for (const listener of this.#gapListeners) listener();
    });
    link.onAvailable(() => this.#flush());
  }

  static async create(link: RedisLink, onError: (err: unknown) => void): Promise<RedisSessionChanges> {
    const subscriber = await link.subscriber(onError);
    const changes = new RedisSessionChanges(link, subscriber);
    await subscriber.connection.subscribe(CHANNEL, (raw) => {
      const message = JSON.parse(raw) as { from?: string; change?: SessionChange };
      if (message.from === changes.#origin) return; // heard already, when it was published
      const change = message.change ?? (message as SessionChange);
      for (const listener of changes.#listeners) listener(change);
    });
    return changes;
  }

  get listening(): boolean {
    return this.#subscriber.listening;
  }

  publish(change: SessionChange): void {
    // This instance hears its own change at once, whatever Redis does.
    for (const listener of this.#listeners) listener(change);
    this.#send(JSON.stringify({ from: this.#origin, change }));
  }

  #send(message: string): void {
    void this.#link.run((c) => c.publish(CHANNEL, message)).catch(() => {
      this.#unsent.push(message);
      if (this.#unsent.length > MAX_UNSENT) this.#unsent.shift();
    });
  }

  #flush(): void {
    for (const message of this.#unsent.splice(0)) this.#send(message);
  }

  subscribe(listener: (change: SessionChange) => void): void {
    this.#listeners.push(listener);
  }

  onGap(listener: () => void): void {
    this.#gapListeners.push(listener);
  }

  async close(): Promise<void> {
    await this.#subscriber.close();
  }
}

export interface SessionState {
  sessionLive: boolean;
  membership: ActiveMembership | undefined;
}

interface Entry {
  userId: string;
  sessionId: string;
  tenantId: string;
  state: SessionState;
  expiresAt: number;
}

const MAX_ENTRIES = 50_000;

/**
 * Live logins with an active membership, remembered for a short while so that a request does not spend a
 * transaction on checking them. Only positive answers are kept (a new membership counts at once), and any
 * change on any instance evicts at once; the time limit is only a backstop for a lost notification.
 */
export class SessionCache {
  readonly #changes: SessionChanges;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry>();
  /** Bumped by every change: a lookup that began before a change does not store what it read. */
  #epoch = 0;

  constructor(changes: SessionChanges = new LocalSessionChanges(), ttlMs = 30_000) {
    this.#changes = changes;
    this.#ttlMs = ttlMs;
    changes.subscribe((change) => this.#evict(change));
    changes.onGap(() => this.#evictAll());
  }

  async lookup(tenantId: string, userId: string, sessionId: string, load: () => Promise<SessionState>): Promise<SessionState> {
    // Deaf to other instances' changes, the cache is not consulted nor filled: every request checks.
    if (!this.#changes.listening) return load();
    const key = `${tenantId}|${userId}|${sessionId}`;
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.state;
    const epoch = this.#epoch;
    const state = await load();
    if (state.sessionLive && state.membership && epoch === this.#epoch && this.#ttlMs > 0 && this.#changes.listening) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { userId, sessionId, tenantId, state, expiresAt: Date.now() + this.#ttlMs });
    }
    return state;
  }

  /** Tells every instance, after the change has committed. */
  changed(change: SessionChange): void {
    this.#changes.publish(change);
  }

  /** Runs after each change is applied here (the gateway closes the sockets it ended). */
  onChange(listener: (change: SessionChange) => void): void {
    this.#changes.subscribe(listener);
  }

  /** Runs when changes may have been missed: every login trusted until now is to be checked again. */
  onGap(listener: () => void): void {
    this.#changes.onGap(listener);
  }

  #evictAll(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  close(): Promise<void> {
    return this.#changes.close();
  }

  #evict(change: SessionChange): void {
    if ('apiKeyId' in change) return; // keys are not cached: each request looks its key up
    this.#epoch++;
    for (const [key, entry] of this.#entries) {
      const matches =
        'sessionId' in change
          ? entry.sessionId === change.sessionId
          : entry.userId === change.userId && (change.tenantId === undefined || entry.tenantId === change.tenantId);
      if (matches) this.#entries.delete(key);
    }
  }
}
