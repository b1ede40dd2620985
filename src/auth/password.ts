import { Piscina } from 'piscina';
import type { PasswordTask } from './password.worker.ts';

// Hashes and checks passwords on a pool of worker threads (bcryptjs, cost from BCRYPT_COST).
export class PasswordHasher {
  readonly #pool: Piscina<PasswordTask, string | boolean>;
  readonly #cost: number;
  #dummyHash: Promise<string> | undefined;

  constructor(cost: number, threads = 1) {
    this.#cost = cost;
    this.#pool = new Piscina({
      filename: new URL('./password.worker.ts', import.meta.url).href,
      minThreads: threads,
      maxThreads: threads,
    });
  }

  async hash(password: string): Promise<string> {
    return (await this.#pool.run({ op: 'hash', password, cost: this.#cost })) as string;
  }

  async verify(password: string, hash: string): Promise<boolean> {
    return (await this.#pool.run({ op: 'verify', password, hash })) as boolean;
  }

  // For logins with an unknown e-mail: comparing against a real hash of the same cost takes as long as
  // a real check, so the answer's timing does not tell which addresses have accounts.
  async verifyAgainstNothing(password: string): Promise<false> {
    this.#dummyHash ??= this.hash('not a password of anyone');
    await this.verify(password, await this.#dummyHash);
    return false;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
