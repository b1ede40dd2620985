import { randomBytes } from 'node:crypto';
import type { RedisClientType } from 'redis';

export const TICKET_TTL_MS = 30_000;

export interface TicketData {
  userId: string;
  tenantId: string;
  sessionId: string;
}

/** Single-use, short-lived tickets that let a browser open the WebSocket without headers. */
export interface TicketStore {
  issue(data: TicketData): Promise<{ ticket: string; expiresAt: Date }>;
  /** The ticket's data, once: a second use, or a use after it expired, finds nothing. */
  consume(ticket: string): Promise<TicketData | undefined>;
}

const newTicket = () => randomBytes(24).toString('base64url');

export class MemoryTicketStore implements TicketStore {
  readonly #tickets = new Map<string, { data: TicketData; expiresAt: number }>();
  readonly #ttlMs: number;

  constructor(ttlMs = TICKET_TTL_MS) {
    this.#ttlMs = ttlMs;
  }

  async issue(data: TicketData) {
    const now = Date.now();
    for (const [key, t] of this.#tickets) if (t.expiresAt <= now) this.#tickets.delete(key);
    const ticket = newTicket();
    const expiresAt = now + this.#ttlMs;
    this.#tickets.set(ticket, { data, expiresAt });
    return { ticket, expiresAt: new Date(expiresAt) };
  }

  async consume(ticket: string) {
    const found = this.#tickets.get(ticket);
    this.#tickets.delete(ticket);
    return found && found.expiresAt > Date.now() ? found.data : undefined;
  }
}

/** Tickets in Redis, so a ticket issued by one instance opens a socket on another. */
export class RedisTicketStore implements TicketStore {
  readonly #redis: RedisClientType;
  readonly #ttlMs: number;

  constructor(redis: RedisClientType, ttlMs = TICKET_TTL_MS) {
    this.#redis = redis;
    this.#ttlMs = ttlMs;
  }

  async issue(data: TicketData) {
    const ticket = newTicket();
    await this.#redis.set(`chat:ws-ticket:${ticket}`, JSON.stringify(data), { PX: this.#ttlMs });
    return { ticket, expiresAt: new Date(Date.now() + this.#ttlMs) };
  }

  async consume(ticket: string) {
    const raw = await this.#redis.getDel(`chat:ws-ticket:${ticket}`);
    return raw ? (JSON.parse(raw) as TicketData) : undefined;
  }
}
