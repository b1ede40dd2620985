import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../shared/principal.ts';
import { invalidInput } from '../shared/errors.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { FEED_START, readFeed } from './feed.repository.ts';

type S = components['schemas'];

// A feed position is (txid, position); src/events/feed.repository.ts says why that order misses nothing.
const encode = (txid: string, position: number) => Buffer.from(JSON.stringify([txid, position])).toString('base64url');

function decode(cursor: string): { txid: string; position: number } {
  try {
    const [txid, position] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, number];
    if (/^\d{1,20}$/.test(txid) && Number.isSafeInteger(position) && position >= 0) return { txid, position };
  } catch {
    // fall through
  }
  throw invalidInput({ field: 'after', message: 'is not a cursor this API gave out' });
}

export class EventService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { after?: string; limit?: number }): Promise<S['EventList']> {
    const after = query.after ? decode(query.after) : FEED_START;
    const { rows } = await this.#database.withTenant(principal.tenantId, (trx) =>
      readFeed(trx, { tenantId: principal.tenantId, after, limit: query.limit ?? DEFAULT_PAGE_SIZE, serial: this.#database.kind === 'pglite' }),
    );
    const last = rows[rows.length - 1];
    return {
      // The row's type and data were written together from EventPayloads (outbox.ts): a pair the union holds.
      data: rows.map(
        (r) =>
          ({
            id: r.id,
            type: r.type,
            tenant_id: r.tenant_id,
            created_at: r.created_at.toISOString(),
            data: r.data,
          }) as S['Event'],
      ),
      next_cursor: last ? encode(last.txid, last.position) : encode(after.txid, after.position),
    };
  }
}
