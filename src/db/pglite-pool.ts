import { type PGlite, type Results, parse, protocol } from '@electric-sql/pglite';
import { TransactionAbortedError } from './errors.ts';
import { OneConnection } from './one-connection.ts';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/**
 * Statements kept prepared at most; the least recently used goes when a new one comes. The app names 64
 * at most (src/db/prepared.ts); the bound holds for any caller that would name more.
 */
const MAX_PREPARED = 256;

/** Names are the process's, not a pool's: two pools over one PGlite instance never take the same. */
let named = 0;

interface PreparedStatement {
  name: string;
  /** The parameters' type OIDs, as the server inferred them: each value is serialised for its type. */
  types: number[];
}

// Presents one PGlite instance as the pg pool Kysely's PostgresDialect expects. PGlite is a single
// connection, so the pool hands out one client at a time: a transaction keeps the connection until it
// releases it, and other work waits its turn instead of interleaving statements into that transaction.
export class PGlitePool implements PostgresPool {
  readonly #db: PGlite;
  readonly #connection = new OneConnection();
  /** By SQL text, least recently used first. */
  readonly #prepared = new Map<string, PreparedStatement>();
  /** Names of statements let go, closed on the server with the next statement sent. */
  #closing: string[] = [];
  readonly #prepare: (sql: string) => boolean;
  readonly #maxPrepared: number;

  /**
   * `prepare`: which statements with parameters are parsed and planned once, then run by name (see #run):
   * the service names those src/db/prepared.ts names, the hot ones, as on PostgreSQL (given here, so that
   * the database's thread, src/db/pglite.worker.ts, need not load Kysely to know them). Naming every statement
   * made others slower once the engine planned them generically (the webhook backlog's drain: 4,490
   * deliveries/s against 6,405).
   */
  constructor(db: PGlite, options: { prepare: (sql: string) => boolean; maxPrepared?: number }) {
    this.#db = db;
    this.#prepare = options.prepare;
    this.#maxPrepared = options.maxPrepared ?? MAX_PREPARED;
    if (!(this.#maxPrepared >= 1)) throw new Error('PGlitePool: maxPrepared must be at least 1');
  }

  /** One connection: in use or idle, and how many wait for it. */
  get stats(): { inUse: number; idle: number; waiting: number } {
    return this.#connection.stats;
  }

  async connect(): Promise<PostgresPoolClient> {
    const release = await this.#connection.acquire();
    const db = this.#db;
    const client = {
      query: async <R>(sqlText: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> => {
        // A parameterless statement may hold several commands (migrations); only exec runs those.
        const results =
          parameters.length === 0
            ? await db.exec(sqlText)
            : [this.#prepare(sqlText) ? await this.#run<R>(sqlText, parameters) : await db.query<R>(sqlText, parameters as unknown[])];
        const last = results[results.length - 1] as { rows: R[]; affectedRows?: number; command?: string } | undefined;
        if (last?.command === 'ROLLBACK' && /^\s*commit\s*$/i.test(sqlText)) throw new TransactionAbortedError();
        return {
          command: (last?.command ?? 'SELECT') as PostgresQueryResult<R>['command'],
          rowCount: last?.affectedRows ?? last?.rows.length ?? 0,
          rows: last?.rows ?? [],
        };
      },
      release,
    };
    return client as PostgresPoolClient;
  }

  /**
   * Runs a statement with parameters under a name, as PGlite's own query does it otherwise: its query sends
   * Parse, Describe, Bind, Describe, Execute and Sync as six calls into the engine, and the engine
   * parses and plans the statement every time (most of a GET's database work on PGlite, under
   * npm run bench:probe). The values are serialised and the rows parsed by PGlite's own
   * serializers and parsers, as query does. One that no longer fits (a column's type changed under it) fails once and is prepared anew.
   */
  async #run<R>(sqlText: string, parameters: readonly unknown[]): Promise<Results<R>> {
    const db = this.#db;
    // Refuses a database closing or closed, as PGlite's own query does.
    await db._checkReady();
    return db._runExclusiveTransaction(() =>
      db._runExclusiveQuery(async () => {
        const statement = this.#prepared.get(sqlText) ?? (await this.#parse(sqlText));
        // Used last: the end of the map.
        this.#prepared.delete(sqlText);
        this.#prepared.set(sqlText, statement);
        const values = parameters.map((value, i) => {
          if (value == null) return null;
          const serialize = db.serializers[statement.types[i]!];
          return serialize ? serialize(value) : String(value);
        });
        let messages;
        try {
          messages = await db.execProtocolStream(
            this.#messages(protocol.serialize.bind({ statement: statement.name, values }), protocol.serialize.describe({ type: 'P' }), protocol.serialize.execute({})),
            { syncToFs: false },
          );
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code === '0A000' || code === '26000') this.#forget(sqlText);
          throw err;
        }
        // As query: after a statement that succeeded (an error's code must reach the caller as it is).
        await db.syncToFs();
        return parse.parseResults(messages, db.parsers)[0] as Results<R>;
      }),
    );
  }

  async #parse(sqlText: string): Promise<PreparedStatement> {
    const name = `pglite_${++named}`;
    const messages = await this.#db.execProtocolStream(this.#messages(protocol.serialize.parse({ name, text: sqlText }), protocol.serialize.describe({ type: 'S', name })), {
      syncToFs: false,
    });
    const statement = { name, types: parse.parseDescribeStatementResults(messages) };
    while (this.#prepared.size >= this.#maxPrepared) this.#forget(this.#prepared.keys().next().value!);
    return statement;
  }

  #forget(sqlText: string): void {
    const statement = this.#prepared.get(sqlText);
    if (!statement) return;
    this.#prepared.delete(sqlText);
    this.#closing.push(statement.name);
  }

  /** One call into the engine: the statements let go are closed first, and Sync ends it. */
  #messages(...messages: Uint8Array[]): Uint8Array {
    const all = [...this.#closing.splice(0).map((name) => protocol.serialize.close({ type: 'S', name })), ...messages, protocol.serialize.sync()];
    const out = new Uint8Array(all.reduce((n, m) => n + m.length, 0));
    let offset = 0;
    for (const m of all) {
      out.set(m, offset);
      offset += m.length;
    }
    return out;
  }

  async end(): Promise<void> {
    await this.#db.close();
  }
}
