import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';

/**
 * Adds `count` conversations to a tenant in bulk, as the system role, each with one visitor message.
 * Ids are shaped like the API's (prefix + a version-7 layout), so answers pass response validation.
 *
 * Then vacuums, as autovacuum would have after such a load (it is off on some servers, this machine's
 * included). Every conversation inserted updates one of the tenant's counter rows, and a batch's row
 * versions stay until the batch commits and a vacuum passes: after a million, unvacuumed, the 16 rows
 * had 1,137 pages and 8,901 index entries, every list page read them all (9 ms), and the benchmark
 * measured that instead of the list (0.37 of the ideal). Small batches, each followed by a vacuum of the
 * counter rows, also keep the trigger's own updates from walking ever longer chains of versions.
 */
export async function seedConversations(database: Database, tenantId: string, count: number, batch = 10_000): Promise<void> {
  const uuidish = (expr: string) =>
    `substr(${expr},1,8)||'-'||substr(${expr},9,4)||'-7'||substr(${expr},14,3)||'-8'||substr(${expr},18,3)||'-'||substr(${expr},21,12)`;
  for (let start = 0; start < count; start += batch) {
    const end = Math.min(count, start + batch) - 1;
    await database.asSystem(async (trx) => {
      await sql
        .raw(
          `
        WITH rows AS (
          SELECT i, md5('${tenantId}' || i::text) AS h, md5('m' || '${tenantId}' || i::text) AS mh,
                 now() - make_interval(secs => i) AS at
          FROM generate_series(${start}, ${end}) AS i
        ), c AS (
          INSERT INTO conversations (id, tenant_id, status, priority, subject, last_message, last_message_at, last_activity_at, created_at, updated_at, closed_at, message_count)
          SELECT 'conv_' || ${uuidish('h')}, '${tenantId}',
                 CASE WHEN i % 3 = 2 THEN 'closed' ELSE 'open' END, (ARRAY['low','normal','high','urgent'])[1 + i % 4],
                 'Question ' || i, 'Hello, message ' || i, at, at, at, at, CASE WHEN i % 3 = 2 THEN at END, 1
          FROM rows
          RETURNING id, last_activity_at
        )
        INSERT INTO messages (id, tenant_id, conversation_id, sender_type, sender_id, type, content, created_at)
        SELECT 'msg_' || ${uuidish("md5(c.id)")}, '${tenantId}', c.id, 'visitor', NULL, 'text', 'Hello', c.last_activity_at
        FROM c;
      `,
        )
        .execute(trx);
    });
    await sql`vacuum conversation_counts`.execute(database.db);
  }
  await sql`vacuum analyze conversations, messages, conversation_counts`.execute(database.db);
}
