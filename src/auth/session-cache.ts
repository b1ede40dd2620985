import type { RedisClientType } from 'redis';
import type { ActiveMembership } from '../shared/principal.ts';

/**
 * A login that ended (logout, theft, reset), a member whose access changed (role, seat, removal), or an API key
 * whose value stopped working (revoked or rotated).
 */
export type SessionChange = { sessionId: string } | { userId: string; tenantId?: string } | { apiKeyId: string };

/** Carries session changes to every instance (its own included). */
export interface SessionChanges {
  publish(change: SessionChange): void;
  subscribe(listener: (change: SessionChange) => void): void;
  close(): Promise<void>;
}

export class LocalSessionChanges implements SessionChanges {
  readonly #listeners: ((change: SessionChange) => void)[] = [];
  publish(change: SessionChange): void {
    for (const listener of this.#listeners) listener(change);
  }
  subscribe(listener: (change: SessionChange) => void): void {
    this.#listeners.push(listener);
  }
  async close(): Promise<void> {}
}

const CHANNEL = 'chat:sessions';

export class RedisSessionChanges implements SessionChanges {
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;
  readonly #listeners: ((change: SessionChange) => void)[] = [];

  private constructor(publisher: RedisClientType, subscriber: RedisClientType) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
  }

  static async create(redis: RedisClientType, onError: (err: unknown) => void): Promise<RedisSessionChanges> {
    const subscriber = redis.duplicate() as RedisClientType;
    subscriber.on('error', onError);
    await subscriber.connect();
    const changes = new RedisSessionChanges(redis, subscriber);
    await subscriber.subscribe(CHANNEL, (raw) => {
      const change = JSON.parse(raw) as SessionChange;
      for (const listener of changes.#listeners) listener(change);
    });
    return changes;
  }

  publish(change: SessionChange): void {
    void this.#publisher.publish(CHANNEL, JSON.stringify(change)).catch(() => undefined);
  }

  subscribe(listener: (change: SessionChange) => void): void {
    this.#listeners.push(listener);
  }

  async close(): Promise<void> {
    await this.#subscriber.quit().catch(() => undefined);
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
  }

  async lookup(tenantId: string, userId: string, sessionId: string, load: () => Promise<SessionState>): Promise<SessionState> {
    const key = `${tenantId}|${userId}|${sessionId}`;
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.state;
    const epoch = this.#epoch;
    const state = await load();
    if (state.sessionLive && state.membership && epoch === this.#epoch && this.#ttlMs > 0) {
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
