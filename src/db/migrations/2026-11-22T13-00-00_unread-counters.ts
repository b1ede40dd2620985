// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Unread counts kept as counters instead of counted per row at read time. A reader's unread count is
    -- the conversation's countable messages (everything but system notices) less those counted when they
    -- last read, less their own messages since: message_count - seen_count - own_since.
    ALTER TABLE conversations ADD COLUMN message_count bigint NOT NULL DEFAULT 0;
    ALTER TABLE read_marks ADD COLUMN seen_count bigint NOT NULL DEFAULT 0;
    ALTER TABLE read_marks ADD COLUMN own_since bigint NOT NULL DEFAULT 0;
    -- A reader who wrote but never read has a mark without a time.
    ALTER TABLE read_marks ALTER COLUMN last_read_at DROP NOT NULL;

    UPDATE conversations c SET message_count = n.count
    FROM (SELECT conversation_id, count(*) AS count FROM messages WHERE type <> 'system' GROUP BY conversation_id) n
    WHERE n.conversation_id = c.id;
    UPDATE read_marks rm SET
      seen_count = (SELECT count(*) FROM messages m
                    WHERE m.conversation_id = rm.conversation_id AND m.type <> 'system' AND m.created_at <= rm.last_read_at),
      own_since = (SELECT count(*) FROM messages m
                   WHERE m.conversation_id = rm.conversation_id AND m.type <> 'system' AND m.created_at > rm.last_read_at
                     AND m.sender_id = rm.reader_id);
    -- Members' own messages in conversations they never marked read.
    INSERT INTO read_marks (tenant_id, conversation_id, reader_id, last_read_at, seen_count, own_since)
    SELECT m.tenant_id, m.conversation_id, m.sender_id, NULL, 0, count(*)
    FROM messages m
    WHERE m.type <> 'system' AND m.sender_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM read_marks rm WHERE rm.conversation_id = m.conversation_id AND rm.reader_id = m.sender_id)
    GROUP BY m.tenant_id, m.conversation_id, m.sender_id;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DELETE FROM read_marks WHERE last_read_at IS NULL;
       ALTER TABLE read_marks ALTER COLUMN last_read_at SET NOT NULL;
       ALTER TABLE read_marks DROP COLUMN own_since; ALTER TABLE read_marks DROP COLUMN seen_count;
       ALTER TABLE conversations DROP COLUMN message_count;`,
    )
    .execute(db);
}
