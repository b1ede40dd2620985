import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { CannedResponse } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import { conflict, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { DEFAULT_PAGE_SIZE, pageOf } from '../shared/pagination.ts';
import * as repo from './canned-response.repository.ts';

type S = components['schemas'];

const toDto = (c: CannedResponse): S['CannedResponse'] => ({
  id: c.id,
  shortcut: c.shortcut,
  title: c.title,
  content: c.content,
  created_by: c.created_by,
  created_at: c.created_at.toISOString(),
  updated_at: c.updated_at.toISOString(),
});

const shortcutTaken = (err: unknown): never => {
  if (isUniqueViolation(err)) throw conflict('That shortcut is taken');
  throw err;
};

export class CannedResponseService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { q?: string; limit?: number; offset?: number }): Promise<S['CannedResponseList']> {
    const page = { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 };
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) =>
      repo.listCannedResponses(trx, query.q ? { q: query.q } : {}, page),
    );
    return { data: rows.map(toDto), pagination: pageOf(total, page, rows.length) };
  }

  async create(principal: Principal, input: S['CannedResponseCreate']): Promise<S['CannedResponse']> {
    const row = await this.#database
      .withTenant(principal.tenantId, (trx) =>
        repo.insertCannedResponse(trx, {
          id: newId('cannedResponse'),
          tenant_id: principal.tenantId,
          ...input,
          created_by: principal.kind === 'user' ? principal.userId : null,
          now: new Date(),
        }),
      )
      .catch(shortcutTaken);
    return toDto(row);
  }

  async update(principal: Principal, id: string, input: S['CannedResponseUpdate']): Promise<S['CannedResponse']> {
    const row = await this.#database.withTenant(principal.tenantId, (trx) => repo.updateCannedResponse(trx, id, input, new Date())).catch(shortcutTaken);
    if (!row) throw notFound('Canned response');
    return toDto(row);
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteCannedResponse(trx, id));
    if (!deleted) throw notFound('Canned response');
    return { id, deleted: true };
  }
}
