/**
 * The embedded database's one connection, handed to one client at a time (PGlitePool in the process,
 * PGliteThreadPool on its thread): a transaction keeps it until its client releases it, and other work
 * waits its turn instead of interleaving statements into that transaction.
 */
export class OneConnection {
  #busy = false;
  readonly #waiting: (() => void)[] = [];

  /** In use or idle, and how many wait for it. */
  get stats(): { inUse: number; idle: number; waiting: number } {
    return { inUse: this.#busy ? 1 : 0, idle: this.#busy ? 0 : 1, waiting: this.#waiting.length };
  }

  /** Waits for the connection; answers its release, which hands it to the next waiting (once, however often called). */
  async acquire(): Promise<() => void> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#busy = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy = false;
    };
  }
}
