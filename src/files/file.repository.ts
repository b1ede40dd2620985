import { sql } from 'kysely';
import { dbAgo } from '../db/clock.ts';
import type { Tx } from '../db/database.ts';
import type { FileRow, FilesTable } from '../db/schema.ts';
import type { Insertable } from 'kysely';

export async function insertFile(trx: Tx, row: Insertable<FilesTable>): Promise<FileRow> {
  return trx.insertInto('files').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findFile(trx: Tx, id: string): Promise<FileRow | undefined> {
  return trx.selectFrom('files').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The files, locked until the transaction ends (a message attaching them, a delete, the orphan job). */
export async function lockFiles(trx: Tx, ids: readonly string[]): Promise<FileRow[]> {
  if (ids.length === 0) return [];
  return trx.selectFrom('files').selectAll().where('id', 'in', [...ids]).orderBy('id').forUpdate().execute();
}

export async function findFiles(trx: Tx, ids: readonly string[]): Promise<FileRow[]> {
  if (ids.length === 0) return [];
  return trx.selectFrom('files').selectAll().where('id', 'in', [...ids]).execute();
}

/** Ties the files to the conversation and marks them attached (the first attachment's time stays). */
export async function markAttached(trx: Tx, ids: readonly string[], conversationId: string, now: Date): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('files')
    .set({ conversation_id: conversationId, attached_at: sql<Date>`coalesce(attached_at, ${now})` })
    .where('id', 'in', [...ids])
    .execute();
}

/** The conversation a file is uploaded into, and whose visitor it is (files sit below conversations: no import of theirs). */
export async function findUploadConversation(trx: Tx, id: string): Promise<{ visitor_id: string | null } | undefined> {
  return trx.selectFrom('conversations').select('visitor_id').where('id', '=', id).executeTakeFirst();
}

export async function deleteFile(trx: Tx, id: string): Promise<void> {
  await trx.deleteFrom('files').where('id', '=', id).execute();
}

/**
 * Whether the visitor may see the file: their own upload, or a file attached to a message of one of
 * their conversations that is not an internal note.
 */
export async function visitorMaySee(trx: Tx, file: FileRow, visitorId: string): Promise<boolean> {
  if (file.uploaded_by_type === 'visitor' && file.uploaded_by_id === visitorId) return true;
  if (!file.conversation_id) return false;
  const row = await trx
    .selectFrom('messages')
    .innerJoin('conversations', 'conversations.id', 'messages.conversation_id')
    .select('messages.id')
    .where('messages.conversation_id', '=', file.conversation_id)
    .where('conversations.visitor_id', '=', visitorId)
    .where('messages.internal', '=', false)
    .where(sql<boolean>`messages.attachments @> ${JSON.stringify([file.id])}::jsonb`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The tenant's stored bytes (billing's usage). */
export async function storageBytes(trx: Tx, tenantId: string): Promise<number> {
  const row = await trx
    .selectFrom('files')
    .select(sql<number>`coalesce(sum(size), 0)::int8`.as('bytes'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return Number(row.bytes);
}

/**
 * Locks up to `limit` files never attached and older than `ageMs`, skipping any a request holds (a
 * message attaching it right now): the caller removes their objects, then their rows, in this transaction.
 */
export async function lockOrphans(trx: Tx, ageMs: number, limit: number): Promise<FileRow[]> {
  return trx
    .selectFrom('files')
    .selectAll()
    .where('attached_at', 'is', null)
    .where('created_at', '<', dbAgo(ageMs))
    .orderBy('created_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

export async function deleteFiles(trx: Tx, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await trx.deleteFrom('files').where('id', 'in', [...ids]).executeTakeFirst();
  return Number(result.numDeletedRows);
}
