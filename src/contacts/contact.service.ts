import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Contact } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { conflict, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { mergePatch } from '../shared/merge.ts';
import { DEFAULT_PAGE_SIZE, keysetPageOf } from '../shared/pagination.ts';
import * as repo from './contact.repository.ts';

type S = components['schemas'];

const toDto = (c: Contact): S['Contact'] => ({
  id: c.id,
  name: c.name,
  email: c.email,
  phone: c.phone,
  company: c.company,
  custom_attributes: c.custom_attributes as S['CustomAttributes'],
  created_at: c.created_at.toISOString(),
  updated_at: c.updated_at.toISOString(),
});

const emailTaken = (err: unknown): never => {
  if (isUniqueViolation(err, 'contacts_tenant_email_key')) throw conflict('A contact with that e-mail address already exists');
  throw err;
};

// For other features' work inside their own transactions (a conversation names a contact; a visitor's
// verified e-mail is a contact; a visitor's page shows theirs).

/** The contact as the API shows it, or undefined when it is not in this tenant. */
export async function contactInTransaction(trx: Tx, id: string): Promise<S['Contact'] | undefined> {
  const row = await repo.findContact(trx, id);
  return row ? toDto(row) : undefined;
}

/** The id of the contact with this e-mail, created if missing. */
export const contactForEmail = (trx: Tx, tenantId: string, email: string, name: string | undefined, now: Date): Promise<string> =>
  repo.findOrCreateContactByEmail(trx, tenantId, email, name, now);

export class ContactService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { q?: string; limit?: number; cursor?: string }): Promise<S['ContactList']> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    const { rows, hasMore, total, estimated } = await this.#database.withTenant(principal.tenantId, (trx) =>
      repo.listContacts(trx, query.q ? { q: query.q } : {}, { limit, ...(after ? { after } : {}) }),
    );
    return {
      data: rows.map(toDto),
      pagination: keysetPageOf(rows, { limit, hasMore, total, estimated }, (last) => encodeCursor(last.created_at, last.id)),
    };
  }

  async get(principal: Principal, id: string): Promise<S['Contact']> {
    const contact = await this.#database.withTenant(principal.tenantId, (trx) => repo.findContact(trx, id));
    if (!contact) throw notFound('Contact');
    return toDto(contact);
  }

  async create(principal: Principal, input: S['ContactCreate']): Promise<S['Contact']> {
    const row = await this.#database
      .withTenant(principal.tenantId, (trx) =>
        repo.insertContact(trx, {
          id: newId('contact'),
          tenant_id: principal.tenantId,
          name: input.name ?? null,
          email: input.email ?? null,
          phone: input.phone ?? null,
          company: input.company ?? null,
          custom_attributes: mergePatch({}, input.custom_attributes ?? {}),
          now: new Date(),
        }),
      )
      .catch(emailTaken);
    return toDto(row);
  }

  async update(principal: Principal, id: string, input: S['ContactUpdate']): Promise<S['Contact']> {
    const row = await this.#database
      .withTenant(principal.tenantId, async (trx) => {
        const current = await repo.findContact(trx, id, { lock: true });
        if (!current) throw notFound('Contact');
        const { custom_attributes, ...fields } = input;
        return repo.updateContact(
          trx,
          id,
          { ...fields, ...(custom_attributes ? { custom_attributes: mergePatch(current.custom_attributes, custom_attributes) } : {}) },
          new Date(),
        );
      })
      .catch(emailTaken);
    return toDto(row);
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteContact(trx, id));
    if (!deleted) throw notFound('Contact');
    return { id, deleted: true };
  }
}
