import { Worker } from 'node:worker_threads';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import { TransactionAbortedError } from './errors.ts';
import { OneConnection } from './one-connection.ts';

export interface PGliteThreadOptions {
  dataDir: string | undefined;
  /** false: no statement is kept prepared (DATABASE_NAMED_STATEMENTS=false). */
  namedStatements: boolean;
}

/** `named`: run under a name, prepared once (the app's hot statements, src/db/prepared.ts, known on the service's thread). */
export type PGliteThreadRequest = { type: 'query'; id: number; sql: string; parameters: readonly unknown[]; named: boolean } | { type: 'close' };

/** An error as it crosses the thread: its name, message and stack, and its own fields (code, constraint, ...). */
export type SentError = Record<string, unknown> & { name: string; message: string };

export type PGliteThreadReply =
  | { type: 'ready' }
  | { type: 'failed'; error: SentError }
  | { type: 'result'; id: number; command: string; rowCount: number; rows: unknown[] }
  | { type: 'error'; id: number; error: SentError }
  | { type: 'closed' };

/** The error again, with its fields (what src/db/errors.ts reads: code, constraint, message). */
function received(sent: SentError): Error {
  if (sent.name === 'TransactionAbortedError') return new TransactionAbortedError();
  const { name, message, stack, ...fields } = sent;
  const err = Object.assign(new Error(message), fields);
  err.name = name;
  if (typeof stack === 'string') err.stack = stack;
  return err;
}

interface Waiting {
  resolve: (result: PostgresQueryResult<unknown>) => void;
  reject: (err: Error) => void;
}

/**
 * The embedded database on a thread of its own (src/db/pglite.worker.ts), presented as the pg pool
 * Kysely's PostgresDialect expects, like PGlitePool in the process: one connection, handed out one
 * client at a time (a transaction keeps it until it releases it). Its statements and their rows cross
 * the thread as structured clones (dates, byte arrays and numbers as they are).
 */
export class PGliteThreadPool implements PostgresPool {
  readonly #worker: Worker;
  readonly #named: boolean;
  /** Which statements run by name: told by database.ts (src/db/prepared.ts), which this module does not load. */
  #statementName: (sql: string) => string | undefined = () => undefined;
  readonly #replies = new Map<number, Waiting>();
  #nextId = 1;
  readonly #connection = new OneConnection();
  #broken: Error | undefined;
  #closing: Promise<void> | undefined;
  #closed: (() => void) | undefined;

  private constructor(worker: Worker, named: boolean) {
    this.#worker = worker;
    this.#named = named;
  }

  /** Starts the thread and answers once the database in it is open (or fails as opening it failed). */
  static open(options: PGliteThreadOptions): Promise<PGliteThreadPool> {
    // No --import of the app's preloads (telemetry): the thread runs the database alone.
    const worker = new Worker(new URL('./pglite.worker.ts', import.meta.url), { workerData: options, execArgv: [] });
    const pool = new PGliteThreadPool(worker, options.namedStatements);
    return new Promise((resolve, reject) => {
      let opened = false;
      worker.on('message', (reply: PGliteThreadReply) => {
        if (reply.type === 'ready') {
          opened = true;
          // Idle, the thread does not keep the process alive; a statement in flight does (#send).
          worker.unref();
          resolve(pool);
        } else if (reply.type === 'failed') reject(received(reply.error));
        else pool.#receive(reply);
      });
      const broken = (err: Error) => {
        pool.#broken ??= err;
        for (const waiting of pool.#replies.values()) waiting.reject(err);
        pool.#replies.clear();
        pool.#closed?.();
        if (!opened) reject(err);
      };
      worker.on('error', broken);
      worker.on('exit', (code) => broken(new Error(`The embedded database's thread stopped (exit code ${code})`)));
    });
  }

  /** Names the hot statements (src/db/prepared.ts's statementName), before the first statement is sent. */
  nameStatementsBy(statementName: (sql: string) => string | undefined): void {
    this.#statementName = statementName;
  }

  /** One connection: in use or idle, and how many wait for it. */
  get stats(): { inUse: number; idle: number; waiting: number } {
    return this.#connection.stats;
  }

  async connect(): Promise<PostgresPoolClient> {
    const release = await this.#connection.acquire();
    const client = {
      query: <R>(sql: string, parameters: ReadonlyArray<unknown>) => this.#send(sql, parameters) as Promise<PostgresQueryResult<R>>,
      release,
    };
    return client as PostgresPoolClient;
  }

  #send(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<unknown>> {
    if (this.#broken) return Promise.reject(this.#broken);
    if (this.#closing) return Promise.reject(new Error('PGlite is closed'));
    const id = this.#nextId++;
    if (this.#replies.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => {
      this.#replies.set(id, { resolve, reject });
      // Which statements are hot is known here, where the app's modules named them, not on the database's thread.
      const named = this.#named && parameters.length > 0 && this.#statementName(sql) !== undefined;
      this.#worker.postMessage({ type: 'query', id, sql, parameters, named } satisfies PGliteThreadRequest);
    });
  }

  #receive(reply: PGliteThreadReply): void {
    if (reply.type === 'closed') {
      this.#closed?.();
      return;
    }
    if (reply.type !== 'result' && reply.type !== 'error') return;
    const waiting = this.#replies.get(reply.id);
    if (!waiting) return;
    this.#replies.delete(reply.id);
    // Closing keeps the thread referenced until it says it closed: else the process could end first.
    if (this.#replies.size === 0 && !this.#closing) this.#worker.unref();
    if (reply.type === 'error') waiting.reject(received(reply.error));
    else waiting.resolve({ command: reply.command as PostgresQueryResult<unknown>['command'], rowCount: reply.rowCount, rows: reply.rows });
  }

  get closed(): boolean {
    return this.#closing !== undefined || this.#broken !== undefined;
  }

  /** Closes the database cleanly (after the statements sent before), then the thread ends. */
  end(): Promise<void> {
    this.#closing ??= this.#broken
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#closed = resolve;
          this.#worker.ref();
          this.#worker.postMessage({ type: 'close' } satisfies PGliteThreadRequest);
        });
    return this.#closing;
  }
}
