// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Bots and workflows sign what they post like webhooks do, and rotate like them: after a rotation the
    -- old secret signs beside the new one until previous_secret_expires_at.
    ALTER TABLE bots ADD COLUMN previous_secret text, ADD COLUMN previous_secret_expires_at timestamptz;
    ALTER TABLE workflows ADD COLUMN previous_secret text, ADD COLUMN previous_secret_expires_at timestamptz;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    ALTER TABLE bots DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at;
    ALTER TABLE workflows DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at;
  `,
    )
    .execute(db);
}
