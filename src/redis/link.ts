import { EventEmitter } from 'node:events';
import type { RedisClientType } from 'redis';
import { AppError } from '../shared/errors.ts';

/** How long a client that found Redis unavailable waits before it is told to try again. */
export const REDIS_RETRY_AFTER_SECONDS = 2;

/** Redis did not answer within the budget, or the connection is down: the caller falls back or answers 503. */
export class RedisUnavailableError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`Redis is unavailable: ${reason}`, options);
    this.name = 'RedisUnavailableError';
  }
}

/** The 503 a request answers when what it needs cannot work without Redis. */
export const redisUnavailable = (cause: unknown) =>
  new AppError('ERR_UNAVAILABLE', 'A dependency (Redis) does not answer; retry shortly', {
    headers: { 'Retry-After': String(REDIS_RETRY_AFTER_SECONDS) },
    cause,
  });

export interface RedisLinkOptions {
  /** The longest a request waits on one command. */
  timeoutMs: number;
  /** After a command ran out of time, later ones fail at once for this long instead of each waiting. */
  breakMs?: number;
}

/**
 * One Redis connection for commands, with the rule that no request waits on Redis longer than a budget:
 * commands are refused at once while the connection is down (no offline queue), and one that Redis does
 * not answer in time fails after the budget and makes the next ones fail at once for a short while.
 * Callers decide what a failure means: a rate limit counts in memory, a presence read answers from this
 * instance, a WebSocket ticket answers 503.
 */
export class RedisLink {
  readonly client: RedisClientType;
  readonly #timeoutMs: number;
  readonly #breakMs: number;
  #brokenUntil = 0;
  /** The end of the spell of failing at once (see onAvailable). */
  #mended: NodeJS.Timeout | undefined;
  readonly #events = new EventEmitter();

  constructor(client: RedisClientType, options: RedisLinkOptions) {
    this.client = client;
    this.#timeoutMs = options.timeoutMs;
    this.#breakMs = options.breakMs ?? 1000;
    // Each part that keeps state in Redis listens once for its life; tests make many such parts.
    this.#events.setMaxListeners(0);
    // Each time the connection is back, whoever kept state that Redis may have lost is told.
    client.on('ready', () => {
      this.#brokenUntil = 0;
      this.#events.emit('ready');
      this.#events.emit('available');
    });
  }

  /** Whether commands are worth trying now. */
  get up(): boolean {
    return this.client.isReady && Date.now() >= this.#brokenUntil;
  }

  /** Runs after every reconnection (not the first connection): Redis may have lost what this instance wrote. */
  onReconnect(listener: () => void): () => void {
    this.#events.on('ready', listener);
    return () => this.#events.off('ready', listener);
  }

  /**
   * Runs whenever commands work again: after a reconnection, and when a spell of failing at once after a
   * timeout ends with the connection up. Whoever keeps what failed meanwhile (a notification not
   * published) sends it now: a timeout has no reconnection to wait for, and told only then, another
   * instance's sockets would miss the news of a message until the tenant's next event.
   */
  onAvailable(listener: () => void): () => void {
    this.#events.on('available', listener);
    return () => this.#events.off('available', listener);
  }

  /**
   * Runs one command (or MULTI) within the budget. The budget is Redis's time, not this process's: a timer
   * that fires late because the event loop was busy (a large request, a compile) gives the command one
   * more budget, since it may not even have been written yet; and the deadline is checked once more after
   * the I/O that arrived meanwhile has been read, so an answer that is there is never a timeout.
   */
  run<T>(command: (client: RedisClientType) => Promise<T>): Promise<T> {
    if (!this.client.isReady) return Promise.reject(new RedisUnavailableError('not connected'));
    if (Date.now() < this.#brokenUntil) return Promise.reject(new RedisUnavailableError('recently timed out'));
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout;
      const expire = () => {
        if (settled) return;
        settled = true;
        this.#brokenUntil = Date.now() + this.#breakMs;
        this.#mendAfterBreak();
        reject(new RedisUnavailableError(`no answer within ${this.#timeoutMs} ms`));
      };
      const arm = (late: boolean) => {
        const due = performance.now() + this.#timeoutMs;
        timer = setTimeout(() => {
          if (!late && performance.now() - due > this.#timeoutMs / 2) return arm(true);
          setImmediate(expire);
        }, this.#timeoutMs);
      };
      arm(false);
      command(this.client).then(
        (value) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          reject(new RedisUnavailableError(err instanceof Error ? err.message : String(err), { cause: err }));
        },
      );
    });
  }

  #mendAfterBreak(): void {
    if (this.#mended) return;
    this.#mended = setTimeout(() => {
      this.#mended = undefined;
      // Down: its reconnection will tell them. Broken again meanwhile: that timeout set another end.
      if (this.client.isReady && Date.now() >= this.#brokenUntil) this.#events.emit('available');
      else if (this.client.isReady) this.#mendAfterBreak();
    }, Math.max(0, this.#brokenUntil - Date.now()));
    this.#mended.unref();
  }

  /** Ends the connection at once (QUIT would wait for one that is reconnecting). */
  close(): void {
    clearTimeout(this.#mended);
    this.#events.removeAllListeners();
    this.client.destroy();
  }

  /** Whether Redis answers a PING within the budget. */
  async ping(): Promise<boolean> {
    try {
      await this.run((c) => c.ping());
      return true;
    } catch {
      return false;
    }
  }

  /** A connection of its own for subscriptions (a subscribed connection takes no other command). */
  async subscriber(onError: (err: unknown) => void): Promise<Subscriber> {
    const connection = this.client.duplicate() as RedisClientType;
    // A duplicate does not inherit listeners: an unheard 'error' (Redis restarting) would end the process.
    connection.on('error', onError);
    await connection.connect();
    return new Subscriber(connection);
  }
}

/**
 * A subscribed connection that says whether it hears: messages published while it reconnects are lost
 * (Redis keeps none), so its users re-read what they may have missed when it is back (`onResume`, after
 * the client has subscribed again) and poll while it is not (`listening`).
 */
export class Subscriber {
  readonly connection: RedisClientType;
  readonly #events = new EventEmitter();
  #listening = true;

  constructor(connection: RedisClientType) {
    this.connection = connection;
    const lost = () => {
      if (!this.#listening) return;
      this.#listening = false;
      this.#events.emit('lost');
    };
    // An error that left the connection up (a reply it could not parse) loses nothing.
    connection.on('error', () => connection.isReady || lost());
    connection.on('reconnecting', lost);
    connection.on('end', lost);
    // node-redis subscribes again before it says 'ready' (its socket initiator awaits the resubscription).
    connection.on('ready', () => {
      if (this.#listening) return;
      this.#listening = true;
      this.#events.emit('resume');
    });
  }

  get listening(): boolean {
    return this.#listening && this.connection.isReady;
  }

  onResume(listener: () => void): () => void {
    this.#events.on('resume', listener);
    return () => this.#events.off('resume', listener);
  }

  onLost(listener: () => void): () => void {
    this.#events.on('lost', listener);
    return () => this.#events.off('lost', listener);
  }

  /**
   * Calls `tick` every `everyMs` while the connection does not hear, and once when it hears again: what
   * reads a feed on a notification reads it on this instead, at a bounded rate.
   */
  whileDeaf(everyMs: number, tick: () => void): () => void {
    let timer: NodeJS.Timeout | undefined;
    const start = () => {
      clearInterval(timer);
      timer = setInterval(tick, everyMs);
      timer.unref();
    };
    const stopLost = this.onLost(start);
    const stopResume = this.onResume(() => {
      clearInterval(timer);
      timer = undefined;
      tick();
    });
    if (!this.listening) start();
    return () => {
      clearInterval(timer);
      stopLost();
      stopResume();
    };
  }

  /** At once: QUIT would wait for a connection that is reconnecting, and nothing unsent here matters. */
  async close(): Promise<void> {
    this.#events.removeAllListeners();
    this.connection.destroy();
  }
}

/**
 * Connects to Redis for the service: commands refused at once while the connection is down (a request
 * never queues behind a reconnection), and reconnection attempts every 50 ms to 1 s. The client is
 * imported here, so the embedded default never loads it.
 */
export async function openRedis(url: string, options: RedisLinkOptions & { onError: (err: unknown) => void }): Promise<RedisLink> {
  const { createClient } = await import('redis');
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 2_000, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000) },
  }) as RedisClientType;
  client.on('error', options.onError);
  const link = new RedisLink(client, options);
  await client.connect();
  return link;
}
