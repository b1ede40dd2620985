import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

export async function listCannedResponses(trx: Tx, filter: { q?: string }, page: { limit: number; offset: number }) {
  let query = trx.selectFrom('canned_responses').selectAll();
  if (filter.q) {
    const escaped = filter.q.replace(/[\\%_]/g, (c) => `\\${c}`);
    query = query.where((eb) => eb.or([eb('shortcut', 'like', `${escaped.toLowerCase()}%`), eb('title', 'ilike', `%${escaped}%`)]));
  }
  return offsetPage(query.orderBy('shortcut'), page);
}

export async function insertCannedResponse(
  trx: Tx,
  row: { id: string; tenant_id: string; shortcut: string; title: string; content: string; created_by: string | null; now: Date },
) {
  const { now, ...values } = row;
  return trx.insertInto('canned_responses').values({ ...values, created_at: now, updated_at: now }).returningAll().executeTakeFirstOrThrow();
}

export async function updateCannedResponse(trx: Tx, id: string, changes: { shortcut?: string; title?: string; content?: string }, now: Date) {
  return trx.updateTable('canned_responses').set({ ...changes, updated_at: now }).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function deleteCannedResponse(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('canned_responses').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}
