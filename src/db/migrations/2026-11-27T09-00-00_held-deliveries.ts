// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- The deliveries of a disabled endpoint stay pending, and due, until it is enabled again. A claim walks
    -- the due index oldest first and met every one of them before any delivery it could take, at every
    -- claim: an endpoint disabled after five days of failures held five days of deliveries. Held ones
    -- leave the index; enabling or disabling an endpoint sets the flag on its pending deliveries.
    ALTER TABLE webhook_deliveries ADD COLUMN held boolean NOT NULL DEFAULT false;
    UPDATE webhook_deliveries AS d SET held = true
      FROM webhooks AS w
      WHERE w.id = d.webhook_id AND NOT w.enabled AND d.status = 'pending';
    DROP INDEX webhook_deliveries_due_idx;
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND NOT held;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP INDEX webhook_deliveries_due_idx;
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    ALTER TABLE webhook_deliveries DROP COLUMN held;
  `,
    )
    .execute(db);
}
