import { sql } from 'kysely';
import { dbAgo } from '../db/clock.ts';
import type { Tx } from '../db/database.ts';
import { allColumns, prepared } from '../db/prepared.ts';
import type { Insertable } from 'kysely';
import type { MessagesTable } from '../db/schema.ts';

/** A message row to insert, with its attachments as the list they are (stored as JSON). */
export type NewMessage = Omit<Insertable<MessagesTable>, 'attachments' | 'created_at' | 'internal'> & {
  internal: boolean;
  attachments: string[];
  created_at: Date;
};

/** Every column of messages, by name (a prepared statement's answer keeps its shape: src/db/prepared.ts). */
const MESSAGE_COLUMNS = allColumns<MessagesTable>()([
  'id',
  'tenant_id',
  'conversation_id',
  'sender_type',
  'sender_id',
  'type',
  'content',
  'internal',
  'attachments',
  'created_at',
  'sender_name',
  'sender_avatar_url',
]);

type MessageParams = Omit<Required<NewMessage>, 'attachments'> & { attachments: string };

const messageValues = (p: MessageParams) => ({
  id: p.id,
  tenant_id: p.tenant_id,
  conversation_id: p.conversation_id,
  sender_type: p.sender_type,
  sender_id: p.sender_id,
  type: p.type,
  content: p.content,
  internal: p.internal,
  attachments: p.attachments,
  created_at: p.created_at,
  sender_name: p.sender_name,
  sender_avatar_url: p.sender_avatar_url,
});

/**
 * Whether a member's reply leaves its report facts to the app: business hours apply, which the app counts
 * (src/reports/facts.ts). The facts' trigger on the insert says so through a setting of the transaction,
 * named by the message's id (migration 2026-12-06T09-00-00); false for every other message.
 */
const replyFactsDue = sql<boolean>`coalesce(current_setting('app.reply_facts_due', true) = messages.id, false)`.as('reply_facts_due');

const insertMessageStatement = prepared((db, p: MessageParams) =>
  db.insertInto('messages').values(messageValues(p)).returning(MESSAGE_COLUMNS).returning(replyFactsDue),
);

/**
 * A message others will see as unread counts for its sender too, since their read mark, so that their own
 * messages are never unread to them. (The conversation's own counter goes up with its last message:
 * conversation.repository updateConversation, countMessage.) The sender's count is written in the message's
 * own statement: a send's round trips to the database are most of its time, and this one returns nothing
 * the send needs. A data-modifying WITH runs once whether or not the
 * rest reads it.
 */
const insertCountedMessageStatement = prepared((db, p: MessageParams) =>
  db
    .with('own', (w) =>
      w
        .insertInto('read_marks')
        .values({ tenant_id: p.tenant_id, conversation_id: p.conversation_id, reader_id: p.sender_id!, last_read_at: null, own_since: 1 })
        .onConflict((oc) => oc.columns(['conversation_id', 'reader_id']).doUpdateSet({ own_since: sql`read_marks.own_since + 1` })),
    )
    .insertInto('messages')
    .values(messageValues(p))
    .returning(MESSAGE_COLUMNS)
    .returning(replyFactsDue),
);

/** Inserts a message; `countForSender`: its sender's own count goes up with it (a message others see as unread; it has a sender). */
export async function insertMessage(trx: Tx, message: Required<NewMessage>, options: { countForSender?: boolean } = {}) {
  const statement = options.countForSender ? insertCountedMessageStatement : insertMessageStatement;
  const { rows } = await statement(trx, { ...message, attachments: JSON.stringify(message.attachments) });
  return rows[0]!;
}

/** Newest first, going back in time from the cursor. A visitor's view leaves internal notes out. */
export async function listMessages(
  trx: Tx,
  conversationId: string,
  page: { limit: number; before?: { at: Date; id: string } },
  options: { publicOnly?: boolean } = {},
) {
  let base = trx.selectFrom('messages').where('conversation_id', '=', conversationId);
  if (options.publicOnly) base = base.where('internal', '=', false);
  let query = base.selectAll();
  if (page.before) query = query.where(sql<boolean>`(created_at, id) < (${page.before.at}, ${page.before.id})`);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit + 1).execute();
  const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit, total };
}

/** Everything in the conversation counts as seen by the reader, now. */
export async function upsertReadMark(trx: Tx, mark: { tenant_id: string; conversation_id: string; reader_id: string; last_read_at: Date }) {
  const seen = sql<number>`(select message_count from conversations where id = ${mark.conversation_id})`;
  await trx
    .insertInto('read_marks')
    .values({ ...mark, seen_count: seen, own_since: 0 })
    .onConflict((oc) =>
      // A mark never moves back in time (two devices reading at once).
      oc.columns(['conversation_id', 'reader_id']).doUpdateSet({
        last_read_at: sql`greatest(read_marks.last_read_at, excluded.last_read_at)`,
        seen_count: sql`greatest(read_marks.seen_count + read_marks.own_since, excluded.seen_count)`,
        own_since: 0,
      }),
    )
    .execute();
  return trx
    .selectFrom('read_marks')
    .select('last_read_at')
    .where('conversation_id', '=', mark.conversation_id)
    .where('reader_id', '=', mark.reader_id)
    .executeTakeFirstOrThrow();
}

/**
 * Claims an idempotency key for this caller. If another request holds it, waits for that one to commit
 * (the primary key's lock), then answers what it stored. undefined: the key is ours. A key older than
 * retentionMs is taken over afresh, as if it were new, even before the retention job deletes it.
 */
export async function claimIdempotencyKey(
  trx: Tx,
  row: { tenant_id: string; caller_id: string; key: string; request_hash: Uint8Array },
  retentionMs: number,
) {
  const claimed = await trx
    .insertInto('idempotency_keys')
    .values({ ...row, response_status: 0, response_body: '{}' })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'caller_id', 'key'])
        .doUpdateSet({ request_hash: row.request_hash, response_status: 0, response_body: '{}', created_at: sql<Date>`now()` })
        .where('idempotency_keys.created_at', '<', dbAgo(retentionMs)),
    )
    .returning('key')
    .executeTakeFirst();
  if (claimed) return undefined;
  return trx
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_status', 'response_body'])
    .where('tenant_id', '=', row.tenant_id)
    .where('caller_id', '=', row.caller_id)
    .where('key', '=', row.key)
    .executeTakeFirstOrThrow();
}

export async function storeIdempotentResponse(
  trx: Tx,
  row: { tenant_id: string; caller_id: string; key: string },
  response: { status: number; body: unknown },
) {
  await trx
    .updateTable('idempotency_keys')
    .set({ response_status: response.status, response_body: JSON.stringify(response.body) })
    .where('tenant_id', '=', row.tenant_id)
    .where('caller_id', '=', row.caller_id)
    .where('key', '=', row.key)
    .execute();
}
