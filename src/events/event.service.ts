import { sql } from 'kysely';
import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../http/access.ts';
import { AppError } from '../shared/errors.ts';

type S = components['schemas'];

// A feed position is (txid, position). Only events of transactions older than every transaction still
// running are handed out: a slower transaction that commits later always sorts after the cursor.
const encode = (txid: string, position: number) => Buffer.from(JSON.stringify([txid, position])).toString('base64url');

function decode(cursor: string): { txid: string; position: number } {
  try {
    const [txid, position] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, number];
    if (/^\d{1,20}$/.test(txid) && Number.isSafeInteger(position) && position >= 0) return { txid, position };
  } catch {
    // fall through
  }
  throw new AppError('ERR_VALIDATION', 'The request does not match the API contract', {
    fieldErrors: [{ path: '/query/after', message: 'is not a cursor this API gave out' }],
  });
}

export class EventService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { after?: string; limit?: number }): Promise<S['EventList']> {
    const after = query.after ? decode(query.after) : { txid: '0', position: 0 };
    const limit = query.limit ?? 20;
    const rows = await this.#database.withTenant(principal.tenantId, (trx) =>
      trx
        .selectFrom('events')
        .select(['id', 'type', 'tenant_id', 'created_at', 'data', 'position', sql<string>`txid::text`.as('txid')])
        .where(sql<boolean>`(txid, position) > (${after.txid}::xid8, ${after.position})`)
        .where(sql<boolean>`txid < pg_snapshot_xmin(pg_current_snapshot())`)
        .orderBy('txid')
        .orderBy('position')
        .limit(limit)
        .execute(),
    );
    const last = rows[rows.length - 1];
    return {
      data: rows.map((r) => ({
        id: r.id,
        type: r.type as S['EventType'],
        tenant_id: r.tenant_id,
        created_at: r.created_at.toISOString(),
        data: r.data as S['Event']['data'],
      })),
      next_cursor: last ? encode(last.txid, Number(last.position)) : encode(after.txid, after.position),
    };
  }
}
