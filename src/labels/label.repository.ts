import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

// Every query runs as the request role: row-level security keeps it inside the tenant.

export async function listLabels(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('labels').selectAll().orderBy(sql`lower(name)`).orderBy('id'), page);
}

/** Holds the tenant's row until the transaction ends (FOR NO KEY UPDATE: rows referring to it may still be written). */
export async function holdTenant(trx: Tx, tenantId: string): Promise<void> {
  await trx.selectFrom('tenants').select('id').where('id', '=', tenantId).forNoKeyUpdate().execute();
}

export async function countLabels(trx: Tx): Promise<number> {
  const { n } = await trx.selectFrom('labels').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(n);
}

export async function findLabel(trx: Tx, id: string) {
  return trx.selectFrom('labels').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertLabel(trx: Tx, row: { id: string; tenant_id: string; name: string; color: string; description: string | null; now: Date }) {
  const { now, ...values } = row;
  return trx.insertInto('labels').values({ ...values, created_at: now, updated_at: now }).returningAll().executeTakeFirstOrThrow();
}

export async function updateLabel(trx: Tx, id: string, changes: { name?: string; color?: string; description?: string | null }, now: Date) {
  return trx.updateTable('labels').set({ ...changes, updated_at: now }).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function deleteLabel(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('labels').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

/** Whether the conversation is this tenant's (locked: label changes of one conversation run one at a time). */
export async function lockConversationForLabels(trx: Tx, conversationId: string): Promise<boolean> {
  return (await trx.selectFrom('conversations').select('id').where('id', '=', conversationId).forUpdate().executeTakeFirst()) !== undefined;
}

/** Answers whether the label was added (false: the conversation carried it already). */
export async function addConversationLabel(trx: Tx, row: { tenant_id: string; conversation_id: string; label_id: string; now: Date }): Promise<boolean> {
  const { now, ...values } = row;
  const added = await trx
    .insertInto('conversation_labels')
    .values({ ...values, created_at: now })
    .onConflict((oc) => oc.columns(['conversation_id', 'label_id']).doNothing())
    .returning('label_id')
    .executeTakeFirst();
  return added !== undefined;
}

export async function removeConversationLabel(trx: Tx, conversationId: string, labelId: string): Promise<boolean> {
  const result = await trx.deleteFrom('conversation_labels').where('conversation_id', '=', conversationId).where('label_id', '=', labelId).executeTakeFirst();
  return result.numDeletedRows === 1n;
}
