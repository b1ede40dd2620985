import { AppError } from '../shared/errors.ts';

// PostgreSQL reports the same SQLSTATE codes through pg and PGlite.
const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  if (e.code !== UNIQUE_VIOLATION) return false;
  if (!constraint) return true;
  return e.constraint === constraint || (typeof e.message === 'string' && e.message.includes(`"${constraint}"`));
}

const FOREIGN_KEY_VIOLATION = '23503';

/**
 * True when a write named a row that was removed before it committed (an insert or update breaking a
 * foreign key): the service checks what a request names first, so only a removal racing the request gets
 * here. A delete refused because the row is still referenced says "update or delete" and is not this.
 * The message is read in English (lc_messages other than English leaves such a race a 500).
 */
export function isVanishedReference(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown };
  return e.code === FOREIGN_KEY_VIOLATION && typeof e.message === 'string' && e.message.startsWith('insert or update on table');
}

/**
 * A transaction in which a statement failed (its error caught and the work carried on) ends at its COMMIT
 * in a rollback, and PostgreSQL (PGlite too) answers that COMMIT with the tag ROLLBACK and no error. Made
 * the error it is, on both (ServiceClient in database.ts, PGlitePool): its caller would otherwise answer
 * for a change that is not there, and hand over events that do not exist (src/events/outbox.ts).
 */
export class TransactionAbortedError extends Error {
  constructor() {
    super('The transaction was rolled back at its commit: a statement in it had failed');
    this.name = 'TransactionAbortedError';
  }
}

/** Seconds a client is asked to wait while the database does not answer. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

// The socket's errors (the server is down, restarting or unreachable), the server's own "going away"
// codes (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now, 53300 too many
// connections, class 08 connection exceptions) and what pg says when a connection ends under it.
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
const PG_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
];

/** True when err says the database cannot be reached now (as opposed to refusing a statement). */
export function isConnectionError(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && (SOCKET_CODES.has(e.code) || SERVER_CODES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code))) return true;
  if (typeof e.message === 'string' && PG_MESSAGES.some((m) => (e.message as string).startsWith(m))) return true;
  // Connecting to a name with several addresses fails with an AggregateError of each attempt.
  if (Array.isArray(e.errors) && e.errors.some((inner) => isConnectionError(inner, depth + 1))) return true;
  return isConnectionError(e.cause, depth + 1);
}

// What only a connection attempt fails with (nothing is reached, or the server takes no one now): behind a
// pooler these come inside a transaction, at its first statement, but still mean no connection was had.
const CONNECT_ONLY_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', '53300', '57P03', '08001', '08004']);

function failedToConnect(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && CONNECT_ONLY_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && e.message.startsWith('timeout exceeded when trying to connect')) return true;
  // Connecting to a name with several addresses fails with an AggregateError of each attempt.
  if (Array.isArray(e.errors)) return true;
  return failedToConnect(e.cause, depth + 1);
}

/** True when err says a connection attempt ran out of time (waiting again would double a long wait). */
export function isConnectTimeout(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  if (e.code === 'ETIMEDOUT' || (typeof e.message === 'string' && e.message.startsWith('timeout exceeded when trying to connect'))) return true;
  return isConnectTimeout(e.cause, depth + 1);
}

/** True when err says a connection the work was using went away (not that none could be had). */
export function isLostConnection(err: unknown): boolean {
  return isConnectionError(err) && !failedToConnect(err);
}

/** The AppError a lost database connection stands for, or undefined if err is something else. */
export function asUnavailable(err: unknown): AppError | undefined {
  if (err instanceof AppError || !isConnectionError(err)) return undefined;
  return new AppError('ERR_UNAVAILABLE', 'The database does not answer; retry shortly', {
    headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
    cause: err,
  });
}
