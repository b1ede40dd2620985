import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';

/**
 * Adds `count` conversations to a tenant in bulk, as the system role, each with one visitor message.
 * Ids are shaped like the API's (prefix + a version-7 layout), so answers pass response validation.
 */
export async function seedConversations(database: Database, tenantId: string, count: number, batch = 100_000): Promise<void> {
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
  }
  await sql`analyze conversations`.execute(database.db);
  await sql`analyze messages`.execute(database.db);
}
