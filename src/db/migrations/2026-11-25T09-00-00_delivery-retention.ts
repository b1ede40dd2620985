// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Finished deliveries and runs are deleted after a retention period, oldest first, by creation time.
    -- Rows are appended in that order, so a BRIN index finds the old ones for the price of a few pages,
    -- without a B-tree that every delivery's insert and updates would have to maintain.
    CREATE INDEX webhook_deliveries_created_brin ON webhook_deliveries USING brin (created_at);
    CREATE INDEX bot_deliveries_created_brin ON bot_deliveries USING brin (created_at);
    CREATE INDEX workflow_runs_created_brin ON workflow_runs USING brin (created_at);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP INDEX webhook_deliveries_created_brin; DROP INDEX bot_deliveries_created_brin; DROP INDEX workflow_runs_created_brin;`).execute(db);
}
