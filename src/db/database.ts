import { CompiledQuery, Kysely, PostgresDialect, type Transaction, sql } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.ts';
import { TransactionAbortedError, isConnectTimeout, isConnectionError, isLostConnection } from './errors.ts';
import { claimDataDir, type EmbeddedStart, embeddedDataDir, startEmbeddedThread } from './embedded.ts';
import { statementName } from './prepared.ts';
import { TIMESTAMPTZ_OID, parseTimestamptz } from './timestamps.ts';

// The roles the migrations create (see the first migration); repeated here because migrations import
// nothing from the app.
const REQUEST_ROLE = 'chat_app';
const SYSTEM_ROLE = 'chat_system';
/** The advisory lock class that marks a transaction as an event writer: 'evt\0' (src/events/feed.repository.ts). */
export const EVENT_WRITER_LOCK = 0x65767400;

export type Tx = Transaction<DB>;

/**
 * Every transaction's fn may run more than once: when the connection is lost while fn runs (a pooler or a
 * server restarted under it), nothing was committed, and fn runs again on a new connection after a short
 * pause (retryingLostConnection). So fn keeps its effects in the transaction, and what it does outside
 * (a request to a webhook, a mail, a publication) comes after the transaction returns; an effect that can
 * only be made inside must be one that may happen twice (removing a stored file). A loss at the commit
 * itself is never retried: its outcome is unknown.
 */
export interface TransactionOptions {
  /** For the tests of that rule: fn runs once, and a lost connection fails the transaction (503). */
  once?: boolean;
}

export interface WithTenantOptions extends TransactionOptions {
  eventWriter?: boolean;
}

/**
 * How long a transaction whose connection was lost keeps running again (after 250 ms, then twice as long
 * each time): a pooler restarting, or a failover's promotion behind it (PgBouncer answering "server login
 * has been failing" meanwhile), is back within it.
 */
export const LOST_CONNECTION_RETRY_BUDGET_MS = 2000;
/** How long a transaction that could not get a connection tries again before it fails (then 503). */
export const CONNECT_RETRY_BUDGET_MS = 1000;

export interface Database {
  readonly kind: 'postgres' | 'pglite';
  /** The connecting role: migrations and health checks only. Data work goes through withTenant or asSystem. */
  readonly db: Kysely<DB>;
  /**
   * Runs fn in a transaction as the request role, which sees only this tenant's rows. `eventWriter`: the
   * transaction may write events, so feed readers wait for it (src/events/feed.repository.ts).
   */
  withTenant<T>(tenantId: string, fn: (trx: Tx) => Promise<T>, options?: WithTenantOptions): Promise<T>;
  /** Runs fn in a transaction as the system role, for deliberate cross-tenant work (login by e-mail, ...). */
  asSystem<T>(fn: (trx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  ping(): Promise<void>;
  /** Connections in use and idle, and callers waiting for one, now (metrics). */
  poolStats(): { inUse: number; idle: number; waiting: number };
  close(): Promise<void>;
}

// int8 (counts, sizes) as numbers on both drivers: every value we keep in one fits in 2^53.
const INT8_OID = 20;
const parseInt8 = (value: string) => Number(value);
// An int8 array's elements too, as PGlite parses them (its parser of int8 applies to each element).
const INT8_ARRAY_OID = 1016;
const parseInt8Array = (value: string) => (pg.types.getTypeParser(INT8_ARRAY_OID as Parameters<typeof pg.types.getTypeParser>[0], 'text')(value) as (string | null)[]).map((x) => (x === null ? null : Number(x)));

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  poolMax: number;
  /** Sees every statement Kysely runs (the benchmark captures the app's SQL with it). */
  onQuery?: (sql: string, parameters: readonly unknown[]) => void;
  /** Hears connections lost under the pool (the server restarted or went away); they are not fatal. */
  onConnectionError?: (err: Error) => void;
  /** An empty PGlite data directory starts as a copy of the template, when there is one (src/db/pglite-template.ts). */
  template?: boolean;
  /** PGlite runs on a thread of its own (src/db/pglite-thread.ts) instead of the event loop. */
  thread?: boolean;
  /** The embedded database's thread, already started (src/server.ts starts it first); else started here. */
  started?: Promise<EmbeddedStart> | undefined;
  /**
   * Run the prepared statements under their names (the default): per connection on PostgreSQL, once in
   * PGlite (src/db/pglite-pool.ts). Off for a pooler that cannot keep a connection's named statements
   * (PgBouncer in transaction mode before 1.21).
   */
  namedStatements?: boolean;
  /**
   * On PostgreSQL, the pool's client is ServiceClient (the default): it writes a transaction's BEGIN and
   * settings in front of its first statement, one round trip, by replacing pg.Client's query. Off, the pool
   * runs pg.Client as published: BEGIN and the settings are statements of their own, and the named
   * statements are not used (DEPENDENCY_PATCHES; docs/architecture.md).
   */
  patchedClient?: boolean;
}

/** The pg release ServiceClient and BeginThen were written against: test/unit/dependency-patches.test.ts fails on another. */
export const PATCHED_PG_VERSION = '8.23.1';

/** The text asRole sends for its BEGIN on PostgreSQL: ServiceClient holds it back for the transaction's first statement. */
export const BEGIN_MARK = '/* chat: begin with settings */';
const SETTINGS = "select set_config('role', $1, true), set_config('app.tenant_id', $2, true)";
// An event writer announces itself (shared advisory lock, before it has a transaction id) so that feed
// readers hold back later events until it ends, and it alone may insert events (a trigger checks).
const WRITER_SETTINGS = `${SETTINGS}, set_config('app.event_writer', 'on', true),
  pg_advisory_xact_lock_shared($3, hashtext($2) & 2147483647)`;

type Settings = { text: string; values: string[] };

/**
 * A transaction's settings as one statement, on both databases: transaction-local (the `true`), so a
 * pooled connection never carries a tenant into the next request.
 */
export const settingsOf = (role: string, tenantId: string, eventWriter: boolean): Settings =>
  eventWriter ? { text: WRITER_SETTINGS, values: [role, tenantId, String(EVENT_WRITER_LOCK)] } : { text: SETTINGS, values: [role, tenantId] };
type PgResult = { command: string; rowCount: number | null; rows: unknown[] };
type Connection = {
  stream: { cork?: () => void; uncork?: () => void };
  sync(): void;
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(query: { text: string }): void;
  bind(config: { values: string[] }): void;
  execute(config: object): void;
};
type InnerQuery = {
  name?: string;
  callback: ((err: Error | undefined, res?: unknown) => void) | undefined;
  text: string;
  _result: unknown;
  submit(connection: Connection): Error | null;
  handleCommandComplete(msg: unknown, connection: Connection): void;
  handleDataRow(msg: unknown): void;
  handleError(err: unknown, connection: Connection): void;
  handleRowDescription(msg: unknown): void;
  handleEmptyQuery(connection: Connection): void;
  handleReadyForQuery(connection: Connection): void;
  handlePortalSuspended(connection: Connection): void;
  handleCopyInResponse(connection: Connection): void;
  handleCopyData(msg: unknown, connection: Connection): void;
};

/**
 * A transaction's first statement with its BEGIN and settings written in front of it, in one Sync group: one
 * round trip where there were two (pgjdbc sends its BEGIN the same way). Within a group the server skips
 * everything after an error up to the Sync, so the statement never runs without its role and tenant: a
 * failed BEGIN or settings (a cancelled wait for the writer lock) fails it unrun.
 */
class BeginThen {
  readonly #inner: InnerQuery;
  readonly #settings: Settings;
  /** Replies of BEGIN and the settings still to come before the statement's own. */
  #preamble = 2;
  /** What went wrong writing the group (which was then closed with a Sync): the answer at its ReadyForQuery. */
  #failure: Error | undefined;

  constructor(inner: InnerQuery, settings: Settings) {
    this.#inner = inner;
    this.#settings = settings;
  }

  // The client records a named statement as parsed at each ParseComplete: only the statement's own counts.
  get name(): string | undefined {
    return this.#preamble === 0 ? this.#inner.name : undefined;
  }

  get text(): string {
    return this.#inner.text;
  }

  /** Whether the server said BEGIN. */
  get begun(): boolean {
    return this.#preamble < 2;
  }

  /** Whether the server took the settings too: only then does what follows run with the role and tenant. */
  get scoped(): boolean {
    return this.#preamble === 0;
  }

  // The client wraps the callback when it times queries out (query_timeout): the statement's is the one.
  get callback(): InnerQuery['callback'] {
    return this.#inner.callback;
  }

  set callback(callback: InnerQuery['callback']) {
    this.#inner.callback = callback;
  }

  // The client gives the statement's result its type parsers through this.
  get _result(): unknown {
    return this.#inner._result;
  }

  submit(connection: Connection): Error | null {
    const { name, text } = this.#inner;
    // Checked before anything is written: a group left without its Sync would hang the connection.
    const previous = name ? (connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]) : undefined;
    if (previous !== undefined && previous !== text) return new Error(`Prepared statements must be unique - '${name}' was used for a different statement`);
    connection.stream.cork?.();
    try {
      connection.parse({ text: 'begin' });
      connection.bind({ values: [] });
      connection.execute({});
      connection.parse({ text: this.#settings.text });
      connection.bind({ values: this.#settings.values });
      connection.execute({});
      // Parse (unless this connection has it), Bind, Describe, Execute and the group's Sync.
      const refused = this.#inner.submit(connection);
      if (refused) this.#fail(refused, connection);
    } catch (err) {
      this.#fail(err as Error, connection);
    } finally {
      connection.stream.uncork?.();
    }
    // An error answered now would let the client send its next query while the server still answers this
    // group: the group is closed and its own ReadyForQuery carries the error.
    return null;
  }

  #fail(err: Error, connection: Connection): void {
    this.#failure ??= err;
    connection.sync();
  }

  handleCommandComplete(msg: unknown, connection: Connection): void {
    if (this.#preamble > 0) this.#preamble--;
    else this.#inner.handleCommandComplete(msg, connection);
  }

  handleDataRow(msg: unknown): void {
    if (this.#preamble === 0) this.#inner.handleDataRow(msg);
  }

  handleError(err: unknown, connection: Connection): void {
    // Skipped with the rest of the group, the statement was never parsed: the client forgets it only when
    // the error is the statement's own.
    if (this.#preamble > 0 && this.#inner.name) delete connection.submittedNamedStatements[this.#inner.name];
    this.#inner.handleError(err, connection);
  }

  handleRowDescription(msg: unknown): void {
    this.#inner.handleRowDescription(msg);
  }

  handleEmptyQuery(connection: Connection): void {
    this.#inner.handleEmptyQuery(connection);
  }

  handleReadyForQuery(connection: Connection): void {
    if (this.#failure) this.#inner.handleError(this.#failure, connection);
    else this.#inner.handleReadyForQuery(connection);
  }

  handlePortalSuspended(connection: Connection): void {
    this.#inner.handlePortalSuspended(connection);
  }

  handleCopyInResponse(connection: Connection): void {
    this.#inner.handleCopyInResponse(connection);
  }

  handleCopyData(msg: unknown, connection: Connection): void {
    this.#inner.handleCopyData(msg, connection);
  }
}

/**
 * The pool's client. It sends the service's prepared statements (src/db/prepared.ts) under their names, so
 * that the server parses and plans each once per connection (pg remembers which it has sent on a
 * connection), unless `namedStatements` is off. And it holds a transaction's BEGIN back (asRole's
 * BEGIN_MARK) to write it in front of the first statement (BeginThen); a transaction that runs no statement
 * sends nothing.
 */
export class ServiceClient extends pg.Client {
  readonly #named: boolean;
  #begin: Settings | undefined;
  /**
   * The first statement failed before the server took the settings: what the caller sent next would run
   * as the connecting role with no tenant, alone when BEGIN did not happen either. Every statement is
   * refused until the transaction's end, which rolls back what the server began.
   */
  #unscoped: { begun: boolean } | undefined;

  constructor(config?: pg.ClientConfig & { namedStatements?: boolean }) {
    super(config);
    this.#named = config?.namedStatements !== false;
  }

  override query(...args: unknown[]): never {
    const [text, values] = args;
    if (text === BEGIN_MARK && Array.isArray(values)) {
      const [role, tenantId, eventWriter] = values as [string, string, boolean];
      this.#begin = settingsOf(role, tenantId, eventWriter);
      return Promise.resolve(noResult('BEGIN')) as never;
    }
    const begin = this.#begin;
    this.#begin = undefined;
    const ends = text === 'commit' || text === 'rollback';
    const unscoped = this.#unscoped;
    if (unscoped) {
      if (!ends) return Promise.reject(new Error('The transaction has no role and tenant: it can only be rolled back')) as never;
      this.#unscoped = undefined;
      const rolledBack: Promise<unknown> = unscoped.begun ? super.query('rollback') : Promise.resolve(noResult('ROLLBACK'));
      // Asked to commit, it says it did not, as a COMMIT the server answers ROLLBACK does (committed()).
      return (text === 'commit' ? rolledBack.then(() => Promise.reject(new TransactionAbortedError())) : rolledBack) as never;
    }
    if (begin && ends) return Promise.resolve(noResult(text.toUpperCase())) as never;
    const name = this.#named && typeof text === 'string' && Array.isArray(values) && args.length === 2 ? statementName(text) : undefined;
    let sent: Promise<unknown>;
    if (begin) {
      if (typeof text !== 'string' || !Array.isArray(values) || args.length !== 2) {
        this.#unscoped = { begun: false };
        return Promise.reject(new Error("A transaction's first statement must be a text with its values")) as never;
      }
      sent = new Promise((resolve, reject) => {
        const inner = new pg.Query({ ...(name ? { name } : {}), text, values, queryMode: 'extended' } as pg.QueryConfig) as unknown as InnerQuery;
        const group = new BeginThen(inner, begin);
        inner.callback = (err, res) => {
          if (!err) return resolve(res);
          if (!group.scoped) this.#unscoped = { begun: group.begun };
          reject(err);
        };
        super.query(group as never);
      });
    } else {
      const call = super.query as (...a: unknown[]) => never;
      if (!name) return (text === 'commit' ? committed(call.apply(this, args)) : call.apply(this, args)) as never;
      sent = call.call(this, { name, text, values }) as Promise<unknown>;
    }
    if (!name) return sent as never;
    return sent.catch((err: { code?: string; message?: string }) => {
      // The statement as this connection prepared it no longer fits: a migration changed a column's type
      // under a running instance ("cached plan must not change result type"), or something dropped it.
      // This request fails; the connection goes, and the pool's next one prepares the statement anew.
      const stale = (err.code === '0A000' && /cached plan must not change result type/.test(err.message ?? '')) || err.code === '26000';
      // Ending marks the client at once, so the pool drops it when it is released rather than handing it out.
      if (stale) void this.end().catch(() => undefined);
      throw err;
    }) as never;
  }
}

const noResult = (command: string): PgResult => ({ command, rowCount: null, rows: [] });


function committed(result: unknown): unknown {
  if (!(result instanceof Promise)) return result;
  return result.then((res: PgResult) => {
    if (res?.command === 'ROLLBACK') throw new TransactionAbortedError();
    return res;
  });
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const url = options.databaseUrl;
  if (url && /^postgres(ql)?:/.test(url)) {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolMax,
      ...(options.patchedClient === false ? {} : { Client: ServiceClient }),
      // Read by ServiceClient (the pool hands its options to each client).
      namedStatements: options.namedStatements !== false,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? parseInt8 : oid === INT8_ARRAY_OID && format !== 'binary' ? parseInt8Array : oid === TIMESTAMPTZ_OID && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
      // An unreachable server fails the request (503) instead of holding it for as long as TCP tries.
      connectionTimeoutMillis: 10_000,
    } as pg.PoolConfig);
    survivePoolErrors(pool, options.onConnectionError ?? (() => undefined));
    const stats = () => ({ inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount });
    return wrap('postgres', new Kysely<DB>({ dialect: new PostgresDialect({ pool }), ...logOption(options) }), stats, options.patchedClient !== false);
  }
  const dataDir = embeddedDataDir(url, options.dataDir);
  if (options.thread) {
    const { opened, lock } = await (options.started ?? startEmbeddedThread({ dataDir, template: options.template, namedStatements: options.namedStatements !== false }));
    const pool = await opened;
    pool.nameStatementsBy(statementName);
    const database = wrap('pglite', new Kysely<DB>({ dialect: new PostgresDialect({ pool }), ...logOption(options) }), () => pool.stats);
    // As below: closed here too, in case Kysely never connected.
    return { ...database, close: () => database.close().then(() => pool.end()).finally(() => lock?.release()) };
  }
  const lock = await claimDataDir(dataDir, options.template);
  try {
    // Loaded only here: with PGlite on its thread, the service's own thread never loads it.
    const [{ PGlite }, { pg_trgm }, { PGlitePool }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('@electric-sql/pglite/contrib/pg_trgm'),
      import('./pglite-pool.ts'),
    ]);
    // pg_trgm ships with PGlite as a contrib bundle: search's partial words (src/search/).
    const pglite = await PGlite.create({ dataDir, parsers: { [INT8_OID]: parseInt8 }, extensions: { pg_trgm } });
    const pool = new PGlitePool(pglite, { prepare: options.namedStatements === false ? () => false : (text) => statementName(text) !== undefined });
    const database = wrap('pglite', new Kysely<DB>({ dialect: new PostgresDialect({ pool }), ...logOption(options) }), () => pool.stats);
    // Kysely ends its pool only if it ever connected: PGlite is closed here too, so a database opened
    // and closed unused does not stay open under its data directory (and its lock).
    const close = () => database.close().then(() => (pglite.closed ? undefined : pglite.close()));
    return { ...database, close: () => close().finally(() => lock?.release()) };
  } catch (err) {
    await lock?.release();
    throw err;
  }
}

// A connection the server ends (a restart, a failover, a proxy gone) is an 'error' event on its client
// and, while idle, on the pool; unheard, either one ends the process. The pool drops such clients and
// connects afresh when asked, so hearing them is all the recovery there is; the request that was using
// one fails and is answered 503 (see asUnavailable). The pool's event repeats the client's: heard once.
function survivePoolErrors(pool: pg.Pool, onError: (err: Error) => void) {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', onError));
}

const logOption = (options: DatabaseOptions) =>
  options.onQuery
    ? {
        log: (event: { level: string; query: { sql: string; parameters: readonly unknown[] } }) => {
          if (event.level === 'query') options.onQuery!(event.query.sql, event.query.parameters);
        },
      }
    : {};

function wrap(kind: Database['kind'], db: Kysely<DB>, poolStats: Database['poolStats'], patchedClient = false): Database {
  const asRole = <T>(role: string, tenantId: string, fn: (trx: Tx) => Promise<T>, eventWriter = false) =>
    kind === 'postgres' ? connectingAgain((f) => asRoleOnce(role, tenantId, f, eventWriter), fn) : asRoleOnce(role, tenantId, fn, eventWriter);
  const asRoleOnce = <T>(role: string, tenantId: string, fn: (trx: Tx) => Promise<T>, eventWriter = false) => {
    // On PostgreSQL the BEGIN and settings travel with the transaction's first statement, one round trip
    // for all three (ServiceClient); the tenant goes as a parameter.
    if (patchedClient) {
      return db.connection().execute(async (conn) => {
        let result: T;
        try {
          await conn.executeQuery(CompiledQuery.raw(BEGIN_MARK, [role, tenantId, eventWriter]));
          result = await fn(conn as unknown as Tx);
        } catch (err) {
          // Also when the settings failed: the connection must not go back to the pool inside an aborted
          // transaction. One that broke fails the rollback too; the pool drops it (survivePoolErrors).
          await sql`rollback`.execute(conn).catch(() => undefined);
          throw err;
        }
        await sql`commit`.execute(conn);
        return result;
      });
    }
    return db.transaction().execute(async (trx) => {
      const { text, values } = settingsOf(role, tenantId, eventWriter);
      await trx.executeQuery(CompiledQuery.raw(text, values));
      return fn(trx);
    });
  };
  // PGlite runs in the process: it has no connection to lose.
  const retrying = <T>(options: TransactionOptions | undefined, run: (fn: (trx: Tx) => Promise<T>) => Promise<T>, fn: (trx: Tx) => Promise<T>) =>
    kind === 'postgres' && !options?.once ? retryingLostConnection(run, fn) : run(fn);
  return {
    kind,
    db,
    withTenant: (tenantId, fn, options) => retrying(options, (f) => asRole(REQUEST_ROLE, tenantId, f, options?.eventWriter), fn),
    asSystem: (fn, options) => retrying(options, (f) => asRole(SYSTEM_ROLE, '', f), fn),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats,
    close: () => db.destroy(),
  };
}

/**
 * Runs the transaction again when its connection was lost while fn ran: the server never saw a COMMIT, so
 * nothing of that run stands. Not when connecting failed (fn never started: connectingAgain's case), nor
 * when fn had finished (the loss may have cut the commit, whose outcome is unknown).
 */
export async function retryingLostConnection<T>(
  run: (fn: (trx: Tx) => Promise<T>) => Promise<T>,
  fn: (trx: Tx) => Promise<T>,
  budgetMs = LOST_CONNECTION_RETRY_BUDGET_MS,
): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let pause = 250; ; pause *= 2) {
    let started = false;
    let finished = false;
    try {
      return await run(async (trx) => {
        started = true;
        const result = await fn(trx);
        finished = true;
        return result;
      });
    } catch (err) {
      if (!started || finished || !isLostConnection(err) || Date.now() + pause > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * Tries a transaction again, for a second at most, when it failed before fn began because no connection
 * could be had or the one had broke at once: a pooler or a server restarting is back within that (a
 * PgBouncer restart refuses connections for a few hundred milliseconds), and nothing of fn has run. A
 * connection attempt that timed out has waited long enough already.
 */
export async function connectingAgain<T>(run: (fn: (trx: Tx) => Promise<T>) => Promise<T>, fn: (trx: Tx) => Promise<T>, budgetMs = CONNECT_RETRY_BUDGET_MS): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let pause = 100; ; pause *= 2) {
    let started = false;
    try {
      return await run((trx) => {
        started = true;
        return fn(trx);
      });
    } catch (err) {
      if (started || !isConnectionError(err) || isConnectTimeout(err) || Date.now() + pause > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
