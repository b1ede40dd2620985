import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

export interface ClaimLoopOptions<T> {
  /** Names the queue in its logs. */
  label: string;
  logger: Logger;
  /** Attempts in flight on this instance at most. */
  concurrency: number;
  /** Claims up to `free` due items under the claim's lock token, in one transaction. */
  claim(free: number, token: string): Promise<T[]>;
  /** Attempts one and records its outcome under the token. A rejection is logged: the lease runs out and it is retried. */
  attempt(item: T, token: string): Promise<void>;
  /** What names an item in the log. */
  logContext(item: T): Record<string, unknown>;
}

/**
 * The sending side of a queue the feed fills (workflow runs, bot deliveries): claims what is due into the
 * free slots, one claim transaction at a time, and claims again when a claim came back full or an attempt
 * ends. A wake during a claim runs one more. (The webhook dispatcher sends its own way: claims sized by
 * its pace, outcomes recorded in batches.)
 */
export class ClaimLoop<T> {
  readonly #o: ClaimLoopOptions<T>;
  readonly #inFlight = new Set<Promise<void>>();
  #claiming: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: ClaimLoopOptions<T>) {
    this.#o = options;
  }

  wake(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    const run = this.#loop()
      .catch((err: unknown) => this.#o.logger.error({ err }, `${this.#o.label} could not be claimed; the next poll tries again`))
      .finally(() => {
        if (this.#claiming === run) this.#claiming = undefined;
      });
    this.#claiming = run;
  }

  /** Claims no more; resolves when the claim under way and every attempt in flight have ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#claiming?.catch(() => undefined);
    await Promise.allSettled([...this.#inFlight]);
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      for (;;) {
        const free = this.#o.concurrency - this.#inFlight.size;
        if (free <= 0 || this.#stopped) break;
        const token = randomUUID();
        const claimed = await this.#o.claim(free, token);
        for (const item of claimed) {
          const attempt = this.#o.attempt(item, token).catch((err: unknown) =>
            this.#o.logger.error({ err, ...this.#o.logContext(item) }, `${this.#o.label}: an attempt could not record its outcome; its lease runs out and it is tried again`),
          );
          this.#inFlight.add(attempt);
          void attempt.finally(() => {
            this.#inFlight.delete(attempt);
            this.wake();
          });
        }
        if (claimed.length < free) break;
      }
    } while (this.#again && !this.#stopped);
  }
}
