// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- The visitor an event concerns (through its conversation): visitors' sockets get only their own.
    ALTER TABLE events ADD COLUMN visitor_id text;
    -- Resume finds a client's last event by its public id, within the tenant.
    CREATE INDEX events_tenant_id_idx ON events (tenant_id, id);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP INDEX events_tenant_id_idx; ALTER TABLE events DROP COLUMN visitor_id;`).execute(db);
}
