import type { PGlite } from '@electric-sql/pglite';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

// Presents one PGlite instance as the pg pool Kysely's PostgresDialect expects. PGlite is a single
// connection, so the pool hands out one client at a time: a transaction keeps the connection until it
// releases it, and other work waits its turn instead of interleaving statements into that transaction.
export class PGlitePool implements PostgresPool {
  readonly #db: PGlite;
  #busy = false;
  readonly #waiting: (() => void)[] = [];

  constructor(db: PGlite) {
    this.#db = db;
  }

  /** One connection: in use or idle, and how many wait for it. */
  get stats(): { inUse: number; idle: number; waiting: number } {
    return { inUse: this.#busy ? 1 : 0, idle: this.#busy ? 0 : 1, waiting: this.#waiting.length };
  }

  async connect(): Promise<PostgresPoolClient> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#busy = true;
    let released = false;
    const db = this.#db;
    const client = {
      query: async <R>(sqlText: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> => {
        // A parameterless statement may hold several commands (migrations); only exec runs those.
        const results =
          parameters.length === 0
            ? await db.exec(sqlText)
            : [await db.query<R>(sqlText, parameters as unknown[])];
        const last = results[results.length - 1] as { rows: R[]; affectedRows?: number; command?: string } | undefined;
        return {
          command: (last?.command ?? 'SELECT') as PostgresQueryResult<R>['command'],
          rowCount: last?.affectedRows ?? last?.rows.length ?? 0,
          rows: last?.rows ?? [],
        };
      },
      release: () => {
        if (released) return;
        released = true;
        const next = this.#waiting.shift();
        if (next) next();
        else this.#busy = false;
      },
    };
    return client as PostgresPoolClient;
  }

  async end(): Promise<void> {
    await this.#db.close();
  }
}
