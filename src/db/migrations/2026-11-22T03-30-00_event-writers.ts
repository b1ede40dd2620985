// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Feed readers hold back only for transactions that announced themselves as event writers (an advisory
    -- lock taken before they had a transaction id). An event written by any other transaction could be
    -- skipped by a reader, so it is refused here rather than lost later.
    CREATE FUNCTION events_require_writer() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF coalesce(current_setting('app.event_writer', true), '') <> 'on' THEN
        RAISE EXCEPTION 'events are written only by event-writer transactions'
          USING ERRCODE = 'P0001', HINT = 'use inTenantTransaction (src/events/outbox.ts)';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER events_require_writer BEFORE INSERT ON events
      FOR EACH ROW EXECUTE FUNCTION events_require_writer();
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP TRIGGER events_require_writer ON events; DROP FUNCTION events_require_writer();`).execute(db);
}
