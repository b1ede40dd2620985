import { randomBytes } from 'node:crypto';
import { type RedisLink, redisUnavailable } from '../redis/link.ts';

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

/**
 * Tickets in Redis, so a ticket issued by one instance opens a socket on another. Without Redis no ticket
 * can be issued or used (one kept in memory would fail on whichever instance the socket reaches): both
 * answer 503 with Retry-After, and a client that holds a token may open its socket with the token instead.
 */
export class RedisTicketStore implements TicketStore {
  readonly #link: RedisLink;
  readonly #ttlMs: number;

  constructor(link: RedisLink, ttlMs = TICKET_TTL_MS) {
    this.#link = link;
    this.#ttlMs = ttlMs;
  }

  async issue(data: TicketData) {
    const ticket = newTicket();
    await this.#link.run((redis) => redis.set(`chat:ws-ticket:${ticket}`, JSON.stringify(data), { PX: this.#ttlMs })).catch((err: unknown) => {
      throw redisUnavailable(err);
    });
    return { ticket, expiresAt: new Date(Date.now() + this.#ttlMs) };
  }

  async consume(ticket: string) {
    const raw = await this.#link.run((redis) => redis.getDel(`chat:ws-ticket:${ticket}`)).catch((err: unknown) => {
      throw redisUnavailable(err);
    });
    return raw ? (JSON.parse(raw) as TicketData) : undefined;
  }
}
