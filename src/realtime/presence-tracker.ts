import { randomUUID } from 'node:crypto';
import type { RedisClientType } from 'redis';
import type { RedisLink } from '../redis/link.ts';
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

  /** Every connection this tracker holds. */
  *entries(): Generator<{ tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }> {
    for (const [key, conns] of this.#connections) {
      const at = key.indexOf(':');
      const tenantId = key.slice(0, at);
      const subject = key.slice(at + 1);
      for (const [connectionId, status] of conns) yield { tenantId, subject, connectionId, status };
    }
  }
}

/**
 * Presence shared by every instance: per subject and status, a sorted set whose members are connections
 * (instance and connection id), scored by when they expire. An instance refreshes its own on every
 * heartbeat; those of an instance that died expire by themselves.
 *
 * Each call is one MULTI: one round trip, and atomic, so two instances changing the same subject's
 * connections at once each see a before and after that no other change fell between (one announcement
 * per change). Nothing reads a set's members: a subject's presence is whether its online or away set
 * counts a member not yet expired, so a change costs the same with one connection or ten thousand
 * (reading every member made 10,000 sockets of one user take 97 s to connect).
 */
/**
 * While Redis does not answer, presence is this instance's own: its connections are also kept in memory,
 * every answer then comes from there (a member connected only to another instance reads offline), and
 * when Redis is back this instance writes its connections again and removes those that closed meanwhile.
 */
export class RedisPresenceTracker implements PresenceTracker {
  readonly #link: RedisLink;
  readonly #ttlMs: number;
  readonly #instance = randomUUID();
  readonly #local = new MemoryPresenceTracker();
  /** Connections that closed while Redis did not answer: removed there when it is back. */
  readonly #unremoved = new Map<string, { tenantId: string; subject: string; connectionId: string }>();

  constructor(link: RedisLink, ttlMs = 75_000) {
    this.#link = link;
    this.#ttlMs = ttlMs;
    link.onReconnect(() => void this.#restore().catch(() => undefined));
  }

  async #restore(): Promise<void> {
    const removals = [...this.#unremoved.values()];
    this.#unremoved.clear();
    for (const r of removals) await this.remove(r.tenantId, r.subject, r.connectionId);
    await this.refresh([...this.#local.entries()]);
  }

  #key = (tenantId: string, subject: string, status: ConnectionStatus) => `chat:presence:${tenantId}:${subject}:${status}`;
  #member = (connectionId: string) => `${this.#instance}:${connectionId}`;

  /** Queues the two counts that make a subject's presence (read back by presenceAt). The builder queues in place. */
  #count(multi: Multi, tenantId: string, subject: string, now: number): void {
    multi.zCount(this.#key(tenantId, subject, 'online'), `(${now}`, '+inf');
    multi.zCount(this.#key(tenantId, subject, 'away'), `(${now}`, '+inf');
  }

  async presenceOf(tenantId: string, subjects: string[]) {
    const result = new Map<string, Presence>();
    if (subjects.length === 0) return result;
    const now = Date.now();
    let replies: unknown[];
    try {
      replies = await this.#link.run((redis) => {
        const multi = redis.multi();
        for (const s of subjects) this.#count(multi, tenantId, s, now);
        return multi.exec();
      });
    } catch {
      return this.#local.presenceOf(tenantId, subjects);
    }
    subjects.forEach((s, i) => result.set(s, presenceAt(replies, 2 * i)));
    return result;
  }

  async set(tenantId: string, subject: string, connectionId: string, status: ConnectionStatus) {
    const now = Date.now();
    const key = this.#key(tenantId, subject, status);
    const member = this.#member(connectionId);
    const local = await this.#local.set(tenantId, subject, connectionId, status);
    this.#unremoved.delete(member);
    try {
      const replies = await this.#link.run((redis) => {
        const multi = redis.multi();
        this.#count(multi, tenantId, subject, now);
        multi.zRem(this.#key(tenantId, subject, status === 'online' ? 'away' : 'online'), member);
        multi.zAdd(key, { score: now + this.#ttlMs, value: member });
        multi.pExpire(key, this.#ttlMs);
        // Connections of instances that died leave the set as it is written.
        multi.zRemRangeByScore(key, '-inf', now);
        this.#count(multi, tenantId, subject, now);
        return multi.exec();
      });
      return { before: presenceAt(replies, 0), after: presenceAt(replies, 6) };
    } catch {
      return local;
    }
  }

  async remove(tenantId: string, subject: string, connectionId: string) {
    const now = Date.now();
    const member = this.#member(connectionId);
    const local = await this.#local.remove(tenantId, subject, connectionId);
    try {
      const replies = await this.#link.run((redis) => {
        const multi = redis.multi();
        this.#count(multi, tenantId, subject, now);
        multi.zRem(this.#key(tenantId, subject, 'online'), member);
        multi.zRem(this.#key(tenantId, subject, 'away'), member);
        this.#count(multi, tenantId, subject, now);
        return multi.exec();
      });
      return { before: presenceAt(replies, 0), after: presenceAt(replies, 4) };
    } catch {
      if (this.#unremoved.size < 100_000) this.#unremoved.set(member, { tenantId, subject, connectionId });
      return local;
    }
  }

  async refresh(entries: { tenantId: string; subject: string; connectionId: string; status: ConnectionStatus }[]) {
    const now = Date.now();
    // A pipeline per thousand entries, each one round trip where every entry took two. All of them are
    // queued before this returns, and the client writes in the order it is called: a socket closing or
    // changing status after the heartbeat's snapshot is removed or moved after its refresh. (Awaiting each
    // batch before queuing the next let a close land between them, and the later batch put the closed
    // connection back, online for a whole TTL.)
    const batches: Promise<unknown>[] = [];
    if (!this.#link.up) return;
    for (let i = 0; i < entries.length; i += 1000) {
      const batch = this.#link.client.multi();
      const keys = new Set<string>();
      for (const e of entries.slice(i, i + 1000)) {
        const key = this.#key(e.tenantId, e.subject, e.status);
        batch.zAdd(key, { score: now + this.#ttlMs, value: this.#member(e.connectionId) });
        keys.add(key);
      }
      for (const key of keys) {
        batch.pExpire(key, this.#ttlMs);
        // A set kept alive by this instance drops the connections of one that died.
        batch.zRemRangeByScore(key, '-inf', now);
      }
      batches.push(batch.execAsPipeline());
    }
    await Promise.all(batches);
  }
}

type Multi = ReturnType<RedisClientType['multi']>;

/** The presence read by the two counts at `at` in a MULTI's replies. */
function presenceAt(replies: unknown[], at: number): Presence {
  if (Number(replies[at]) > 0) return 'online';
  return Number(replies[at + 1]) > 0 ? 'away' : 'offline';
}
