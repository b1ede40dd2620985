import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import type { Presence, PresenceStore } from '../presence/presence.ts';

export type ConnectionStatus = 'online' | 'away';

/**
 * Who is connected: members (online unless they set away; offline with no connection) and visitors.
 * `subject` is a user id or a visitor id. The change methods answer the subject's presence before and
 * after, so the caller can announce a change.
 */
export interface PresenceTracker extends PresenceStore {
  set(tenantId: string, subject: string, connectionId: string, status: ConnectionStatus): Promise<{ before: Presence; after: Presence }>;
  remove(tenantId: string, subject: string, connectionId: string): Promise<{ before: Presence; after: Presence }>;
  /** Keeps this instance's connections alive (Redis expires those of an instance that died). */
  refresh(entries: { tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }[]): Promise<void>;
}

const summarise = (statuses: Iterable<ConnectionStatus>): Presence => {
  let presence: Presence = 'offline';
  for (const s of statuses) {
    if (s === 'online') return 'online';
    presence = 'away';
  }
  return presence;
};

export class MemoryPresenceTracker implements PresenceTracker {
  readonly #connections = new Map<string, Map<string, ConnectionStatus>>();

  #of(tenantId: string, subject: string) {
    return this.#connections.get(`${tenantId}:${subject}`);
  }

  async presenceOf(tenantId: string, subjects: string[]) {
    return new Map(subjects.map((s) => [s, summarise(this.#of(tenantId, s)?.values() ?? [])]));
  }

  async set(tenantId: string, subject: string, connectionId: string, status: ConnectionStatus) {
    const key = `${tenantId}:${subject}`;
    const conns = this.#connections.get(key) ?? new Map<string, ConnectionStatus>();
    const before = summarise(conns.values());
    conns.set(connectionId, status);
    this.#connections.set(key, conns);
    return { before, after: summarise(conns.values()) };
  }

  async remove(tenantId: string, subject: string, connectionId: string) {
    const key = `${tenantId}:${subject}`;
    const conns = this.#connections.get(key);
    const before = summarise(conns?.values() ?? []);
    conns?.delete(connectionId);
    if (conns?.size === 0) this.#connections.delete(key);
    return { before, after: summarise(conns?.values() ?? []) };
  }

  async refresh() {}
}

/**
 * Presence shared by every instance: a sorted set per subject whose members are this instance's
 * connections, scored by when they expire. An instance refreshes its own on every heartbeat; those of
 * an instance that died expire by themselves.
 */
export class RedisPresenceTracker implements PresenceTracker {
  readonly #redis: RedisClientType;
  readonly #ttlMs: number;
  readonly #instance = randomUUID();

  constructor(redis: RedisClientType, ttlMs = 75_000) {
    this.#redis = redis;
    this.#ttlMs = ttlMs;
  }

  #key = (tenantId: string, subject: string) => `chat:presence:${tenantId}:${subject}`;
  #member = (connectionId: string, status: ConnectionStatus) => `${this.#instance}:${connectionId}:${status}`;

  async #read(key: string): Promise<Presence> {
    const now = Date.now();
    await this.#redis.zRemRangeByScore(key, 0, now);
    const members = await this.#redis.zRange(key, 0, -1);
    return summarise(members.map((m) => m.slice(m.lastIndexOf(':') + 1) as ConnectionStatus));
  }

  async presenceOf(tenantId: string, subjects: string[]) {
    const result = new Map<string, Presence>();
    for (const s of subjects) result.set(s, await this.#read(this.#key(tenantId, s)));
    return result;
  }

  async #drop(key: string, connectionId: string) {
    const prefix = `${this.#instance}:${connectionId}:`;
    const members = await this.#redis.zRange(key, 0, -1);
    const mine = members.filter((m) => m.startsWith(prefix));
    if (mine.length > 0) await this.#redis.zRem(key, mine);
  }

  async set(tenantId: string, subject: string, connectionId: string, status: ConnectionStatus) {
    const key = this.#key(tenantId, subject);
    const before = await this.#read(key);
    await this.#drop(key, connectionId);
    await this.#redis.zAdd(key, { score: Date.now() + this.#ttlMs, value: this.#member(connectionId, status) });
    await this.#redis.pExpire(key, this.#ttlMs);
    return { before, after: await this.#read(key) };
  }

  async remove(tenantId: string, subject: string, connectionId: string) {
    const key = this.#key(tenantId, subject);
    const before = await this.#read(key);
    await this.#drop(key, connectionId);
    return { before, after: await this.#read(key) };
  }

  async refresh(entries: { tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }[]) {
    const expires = Date.now() + this.#ttlMs;
    for (const e of entries) {
      const key = this.#key(e.tenantId, e.subject);
      await this.#redis.zAdd(key, { score: expires, value: this.#member(e.connectionId, e.status) });
      await this.#redis.pExpire(key, this.#ttlMs);
    }
  }
}
