import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { prepared } from '../db/prepared.ts';

/**
 * Writes one event into the outbox, in the caller's transaction (which must be an event writer: see
 * src/events/feed.repository.ts). Reading the outbox is feed.repository.ts's job.
 */
export async function insertEvent(
  trx: Tx,
  event: { id: string; tenant_id: string; type: string; data: unknown; conversation_id: string | null; internal: boolean; recipients: string[]; created_at: Date; workflow_depth?: number },
): Promise<void> {
  await insertEventStatement(trx, { ...event, data: JSON.stringify(event.data), workflow_depth: event.workflow_depth ?? 0 });
}

const insertEventStatement = prepared(
  (
    db,
    p: { id: string; tenant_id: string; type: string; data: string; conversation_id: string | null; internal: boolean; recipients: string[]; created_at: Date; workflow_depth: number },
  ) =>
    db.insertInto('events').values({
      id: p.id,
      tenant_id: p.tenant_id,
      type: p.type,
      data: p.data,
      conversation_id: p.conversation_id,
      internal: p.internal,
      recipients: p.recipients,
      created_at: p.created_at,
      workflow_depth: p.workflow_depth,
      // The conversation's visitor, read in this same transaction: visitors' sockets get only their own (none
      // without a conversation: no row has a null id).
      visitor_id: sql<string | null>`(select visitor_id from conversations where id = ${p.conversation_id})`,
    }),
);
