import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';

/**
 * Writes one event into the outbox, in the caller's transaction (which must be an event writer: see
 * src/events/feed.repository.ts). Reading the outbox is feed.repository.ts's job.
 */
export async function insertEvent(
  trx: Tx,
  event: { id: string; tenant_id: string; type: string; data: unknown; conversation_id: string | null; internal: boolean; recipients: string[]; created_at: Date; workflow_depth?: number },
): Promise<void> {
  await trx
    .insertInto('events')
    .values({
      ...event,
      data: JSON.stringify(event.data),
      // The conversation's visitor, read in this same transaction: visitors' sockets get only their own.
      visitor_id: event.conversation_id ? sql<string | null>`(select visitor_id from conversations where id = ${event.conversation_id})` : null,
    })
    .execute();
}
