// PostgreSQL reports the same SQLSTATE codes through pg and PGlite.
const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  if (e.code !== UNIQUE_VIOLATION) return false;
  if (!constraint) return true;
  return e.constraint === constraint || (typeof e.message === 'string' && e.message.includes(`"${constraint}"`));
}
