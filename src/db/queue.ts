import { sql } from 'kysely';

// The queue's two figures as SQL over a conversation row, for the statements that answer a conversation
// (conversations) and those that write routing's events (routing): one definition for both.
// `c` is the conversation's table or alias in the statement using them.

/**
 * Where the conversation stands in its queue (1: next), among the conversations of the same department (or
 * of none) that are open, unassigned and not with a bot, by created_at then id as routing gives them out;
 * null when it is not queued. Counts only open rows (the status index), so it costs the queue's length.
 */
export const queuePositionOf = (c: string) =>
  sql<number | null>`case when ${sql.ref(`${c}.status`)} = 'open' and ${sql.ref(`${c}.assigned_user_id`)} is null and ${sql.ref(`${c}.bot_state`)} <> 'active' then (
    select count(*)::int from conversations q
    where q.status = 'open' and q.assigned_user_id is null and q.bot_state <> 'active'
      and q.department_id is not distinct from ${sql.ref(`${c}.department_id`)}
      and (q.created_at < ${sql.ref(`${c}.created_at`)} or (q.created_at = ${sql.ref(`${c}.created_at`)} and q.id <= ${sql.ref(`${c}.id`)}))
  ) end`;

/**
 * Since when the visitor has waited for the team: their oldest message after the last reply they can see
 * (a member's or a bot's, not a note); null when none waits, or the conversation is closed. Two index
 * range scans of the conversation's messages.
 */
export const waitingSinceOf = (c: string) =>
  sql<Date | null>`case when ${sql.ref(`${c}.status`)} <> 'closed' then (
    select min(m.created_at) from messages m
    where m.conversation_id = ${sql.ref(`${c}.id`)} and m.sender_type = 'visitor'
      and m.created_at > coalesce((
        select max(r.created_at) from messages r
        where r.conversation_id = ${sql.ref(`${c}.id`)} and r.sender_type in ('user', 'bot') and not r.internal and r.type = 'text'
      ), '-infinity'::timestamptz)
  ) end`;
