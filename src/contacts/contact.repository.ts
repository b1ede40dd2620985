import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { newId } from '../shared/ids.ts';
import { cappedCount } from '../db/paginate.ts';

const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listContacts(trx: Tx, filter: { q?: string }, page: { limit: number; after?: { at: Date; id: string } }) {
  let base = trx.selectFrom('contacts');
  if (filter.q) {
    const pattern = likePattern(filter.q);
    base = base.where((eb) =>
      eb.or([eb('name', 'ilike', pattern), eb('email', 'ilike', pattern), eb('phone', 'ilike', pattern), eb('company', 'ilike', pattern)]),
    );
  }
  let rowsQuery = base.selectAll();
  if (page.after) rowsQuery = rowsQuery.where(sql<boolean>`(created_at, id) < (${page.after.at}, ${page.after.id})`);
  const rows = await rowsQuery.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit + 1).execute();
  const { total, estimated } = await cappedCount(trx, base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'));
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit, total, estimated };
}

export async function findContact(trx: Tx, id: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('contacts').selectAll().where('id', '=', id);
  if (options.lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function insertContact(
  trx: Tx,
  contact: { id: string; tenant_id: string; name: string | null; email: string | null; phone: string | null; company: string | null; custom_attributes: Record<string, unknown>; now: Date },
) {
  const { now, custom_attributes, ...values } = contact;
  return trx
    .insertInto('contacts')
    .values({ ...values, custom_attributes: JSON.stringify(custom_attributes), created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateContact(
  trx: Tx,
  id: string,
  changes: Partial<{ name: string | null; email: string | null; phone: string | null; company: string | null; custom_attributes: Record<string, unknown> }>,
  now: Date,
) {
  const { custom_attributes, ...rest } = changes;
  return trx
    .updateTable('contacts')
    .set({ ...rest, ...(custom_attributes ? { custom_attributes: JSON.stringify(custom_attributes) } : {}), updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteContact(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('contacts').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

/** The contact with this e-mail (any case), created if missing; concurrent first sessions agree on one. */
export async function findOrCreateContactByEmail(trx: Tx, tenantId: string, email: string, name: string | undefined, now: Date): Promise<string> {
  const byEmail = () => trx.selectFrom('contacts').select('id').where(sql<string>`lower(email)`, '=', email.toLowerCase());
  const existing = await byEmail().executeTakeFirst();
  if (existing) return existing.id;
  await trx
    .insertInto('contacts')
    .values({ id: newId('contact'), tenant_id: tenantId, email, name: name ?? null, custom_attributes: '{}', created_at: now, updated_at: now })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return (await byEmail().executeTakeFirstOrThrow()).id;
}
