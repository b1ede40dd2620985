import {
  type Compilable,
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import type { Tx } from './database.ts';
import type { DB } from './schema.ts';

/**
 * A statement of a hot path, built and compiled by Kysely once instead of at every call. Kysely builds a
 * tree of frozen nodes for each query and walks it to make the SQL, a visible share of a sent message's and
 * a GET's CPU under the profiler, where the SQL and the order of its values never change.
 *
 * `build` writes the query as any repository does, with `p.<name>` where a value goes; it runs once, with
 * placeholders, and each call puts its values in their places. So the query's shape must not depend on
 * the values: no `in` with a list (`= any(...)` takes an array as one value), no column left out because
 * its value is undefined (an insert lists every column it was built with). Values pass to the driver as
 * they would from Kysely (dates, arrays, objects as JSON).
 */
export function prepared<P extends Record<string, unknown>, O>(build: (db: Kysely<DB>, p: P) => Compilable<O>, options: { nameable?: () => boolean } = {}) {
  let statement: { compiled: CompiledQuery<O>; slots: (string | undefined)[] } | undefined;
  return (trx: Tx, params: P): Promise<QueryResult<O>> => {
    statement ??= compile(build, options.nameable?.() ?? true);
    const { compiled, slots } = statement;
    const parameters = compiled.parameters.map((value, i) => {
      const name = slots[i];
      if (name === undefined) return value;
      if (!(name in params)) throw new Error(`prepared statement: no value for ${name}`);
      return params[name];
    });
    return trx.executeQuery<O>({ ...compiled, parameters });
  };
}

/**
 * Prepared statements of one query whose shape varies (which filters, which columns): one per shape, built
 * at the shape's first use. `build` may read only the shape's fields to decide the SQL, and `p` for values;
 * the shape is its own key, so everything that changes the SQL must be in it.
 */
export function preparedShapes<S, P extends Record<string, unknown>, O>(
  build: (db: Kysely<DB>, p: P, shape: S) => Compilable<O>,
  /**
   * How many of its shapes may be kept by name, the first used: a query whose shapes the callers choose
   * (the list page's filters) would otherwise take every name there is, and the hot statements compiled
   * after it (the feed read, at its first commit) would run unnamed for the life of the process.
   */
  options: { names?: number } = {},
) {
  const statements = new Map<string, (trx: Tx, params: P) => Promise<QueryResult<O>>>();
  let named = 0;
  const nameable = () => (options.names === undefined || named < options.names ? (named++, true) : false);
  return (trx: Tx, shape: S, params: P): Promise<QueryResult<O>> => {
    const key = JSON.stringify(shape);
    let statement = statements.get(key);
    if (!statement) {
      statement = prepared((db, p: P) => build(db, p, shape), { nameable });
      statements.set(key, statement);
    }
    return statement(trx, params);
  };
}

/**
 * A table's columns, every one of them, for a statement that names its columns (below): the compiler
 * refuses a list that leaves one out. `allColumns<MessagesTable>()(['id', ...])`.
 */
export const allColumns =
  <T>() =>
  <const L extends readonly (keyof T)[]>(list: L & (Exclude<keyof T, L[number]> extends never ? unknown : never)): L =>
    list;

const PLACEHOLDER = Symbol('placeholder');

/**
 * Server-side names of the prepared statements, by their SQL. On PostgreSQL a statement sent under a name
 * is parsed and planned once per connection (src/db/database.ts): planning was most of the server's CPU
 * for the conversation read sent unnamed. Only statements that name their columns get one: a
 * column added by a migration while an instance runs (a rolling deploy) changes what `*` means, and
 * PostgreSQL refuses to run a prepared `*` whose answer changed shape ("cached plan must not change
 * result type") until the connection is gone.
 */
const names = new Map<string, string>();
/** A `*` anywhere but in `count(*)`: `select *`, `select distinct *`, `"t".*`, `returning *` (and a product). */
const ANY_COLUMNS = /(?<!\()\*(?!\))/;
/**
 * Names given at most, each statement kept on every connection once named. The list page alone has
 * hundreds of possible shapes (src/conversations): only its first 16 get names (preparedShapes' `names`).
 */
const MAX_NAMES = 64;

/** Whether a statement's answer has the columns it names, whatever columns its tables gain. */
export const namesItsColumns = (sql: string): boolean => !ANY_COLUMNS.test(sql);

/** The server-side name of a prepared statement's SQL, or undefined for any other SQL. */
export const statementName = (sql: string): string | undefined => names.get(sql);

function compile<P extends Record<string, unknown>, O>(build: (db: Kysely<DB>, p: P) => Compilable<O>, nameable: boolean) {
  const p = new Proxy({} as P, { get: (_, name) => ({ [PLACEHOLDER]: name }) });
  const compiled = build(compiler, p).compile();
  if (nameable && namesItsColumns(compiled.sql) && !names.has(compiled.sql) && names.size < MAX_NAMES) names.set(compiled.sql, `chat_${names.size + 1}`);
  const slots = compiled.parameters.map((value) =>
    typeof value === 'object' && value !== null && PLACEHOLDER in value ? String((value as { [PLACEHOLDER]: string })[PLACEHOLDER]) : undefined,
  );
  return { compiled, slots };
}

/** Compiles only: it never connects (both databases speak PostgreSQL's SQL). */
const compiler = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
