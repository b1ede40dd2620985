// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- A claim writes a row's lease (locked_until, lock_token, attempts, last_attempt_at), none of it
    -- indexed: with room in the row's page the new version stays there and no index is touched (a HOT
    -- update). Pages filled to the brim by the inserts made every claim a new version elsewhere and an
    -- entry in each of the table's indexes: of 9,124 updates of a webhook backlog, 746 were HOT.
    -- Half of each page is kept free for the versions a row goes through.
    ALTER TABLE webhook_deliveries SET (fillfactor = 50);
    ALTER TABLE bot_deliveries SET (fillfactor = 50);
    ALTER TABLE workflow_runs SET (fillfactor = 50);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    ALTER TABLE webhook_deliveries RESET (fillfactor);
    ALTER TABLE bot_deliveries RESET (fillfactor);
    ALTER TABLE workflow_runs RESET (fillfactor);
  `,
    )
    .execute(db);
}
