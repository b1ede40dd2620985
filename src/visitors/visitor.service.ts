import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../http/access.ts';
import { notFound } from '../shared/errors.ts';

export class VisitorService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async get(principal: Principal, id: string): Promise<components['schemas']['Visitor']> {
    const v = await this.#database.withTenant(principal.tenantId, (trx) =>
      trx.selectFrom('visitors').selectAll().where('id', '=', id).executeTakeFirst(),
    );
    if (!v) throw notFound('Visitor');
    return {
      id: v.id,
      name: v.name,
      email: v.email,
      contact_id: v.contact_id,
      metadata: v.metadata,
      created_at: v.created_at.toISOString(),
      last_seen_at: v.last_seen_at.toISOString(),
    };
  }
}
