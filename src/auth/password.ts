import { Piscina } from 'piscina';
import type { PasswordTask } from './password.worker.ts';

// Hashes and checks passwords on a pool of worker threads (bcryptjs, cost from BCRYPT_COST). The pool
// starts at its first use, or when warm() is called: the service calls it once it answers, since a
// thread's start (a Node environment, the worker's modules) would otherwise take a core from the
// service's own start on a small machine.
export class PasswordHasher {
  readonly #cost: number;
  readonly #threads: number;
  #pool: Piscina<PasswordTask, string | boolean> | undefined;
  #dummyHash: Promise<string> | undefined;

  constructor(cost: number, threads = 1) {
    this.#cost = cost;
    this.#threads = threads;
  }

  /** Starts the pool's threads now rather than at the first hash or check. */
  warm(): void {
    this.#started();
  }

  #started(): Piscina<PasswordTask, string | boolean> {
    this.#pool ??= new Piscina({
      filename: new URL('./password.worker.ts', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
    });
    return this.#pool;
  }

  async hash(password: string): Promise<string> {
    return (await this.#started().run({ op: 'hash', password, cost: this.#cost })) as string;
  }

  async verify(password: string, hash: string): Promise<boolean> {
    return (await this.#started().run({ op: 'verify', password, hash })) as boolean;
  }

  // For logins with an unknown e-mail: comparing against a real hash of the same cost takes as long as
  // a real check, so the answer's timing does not tell which addresses have accounts.
  async verifyAgainstNothing(password: string): Promise<false> {
    this.#dummyHash ??= this.hash('not a password of anyone');
    await this.verify(password, await this.#dummyHash);
    return false;
  }

  async close(): Promise<void> {
    await this.#pool?.destroy();
  }
}
