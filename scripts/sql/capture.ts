// Runs repository functions on a Kysely that reaches no database and records the SQL they send. Each
// statement answers a made-up result: by default one row whose every field reads 0 (so code that reads a
// count or a flag goes on), or as many such rows as a sample's `rows` says (0: nothing found).
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import type { DB } from '../../src/db/schema.ts';

const anyRow: Record<string, unknown> = new Proxy(
  {},
  // 'then' stays undefined: an awaited row must not look like a promise.
  { get: (_target, key) => (typeof key === 'string' && key !== 'then' && key !== 'toJSON' ? 0 : undefined) },
);

class CapturingDriver implements Driver {
  statements: string[] = [];
  rows: number[] = [];

  async init() {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        const n = this.rows[this.statements.length] ?? 1;
        this.statements.push(query.sql);
        return { rows: Array.from({ length: n }, () => anyRow as R), numAffectedRows: BigInt(n) };
      },
      streamQuery: () => {
        throw new Error('streamed queries are not captured');
      },
    };
  }
  async beginTransaction() {}
  async commitTransaction() {}
  async rollbackTransaction() {}
  async releaseConnection() {}
  async destroy() {}
}

const driver = new CapturingDriver();
const db = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => driver,
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** The SQL of every statement fn sends, in order, given a transaction and args. */
export async function capture(fn: (...args: any[]) => unknown, args: unknown[], rows: number[] = []): Promise<string[]> {
  driver.statements = [];
  driver.rows = rows;
  await db.transaction().execute((trx) => Promise.resolve(fn(trx, ...args)));
  return driver.statements;
}
