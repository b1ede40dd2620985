import { invalidInput } from './errors.ts';

/** Opaque keyset cursors: the sort value and id of the last row of a page. */
export function encodeCursor(at: Date, id: string): string {
  return Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
}

export function decodeCursor(cursor: string, param = 'cursor'): { at: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(at);
    if (typeof id === 'string' && id.length <= 100 && !Number.isNaN(date.getTime())) return { at: date, id };
  } catch {
    // fall through
  }
  throw invalidInput({ field: param, message: 'is not a cursor this API gave out' });
}
