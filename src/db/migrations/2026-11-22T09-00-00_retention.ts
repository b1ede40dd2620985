// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Periodic jobs shared by every instance on this database, one row per job. An instance runs a job
    -- only after claiming its row (next_run_at due, no live lease), so two instances never run it at
    -- once, and the next run outlives restarts. A lease that runs out (the instance died) frees the job.
    CREATE TABLE scheduled_jobs (
      name text PRIMARY KEY CHECK (char_length(name) BETWEEN 1 AND 100),
      next_run_at timestamptz NOT NULL,
      locked_until timestamptz,
      lock_token text,
      last_started_at timestamptz,
      last_finished_at timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    -- Not tenant-owned: only the system role, which runs the jobs, touches it.
    ALTER TABLE scheduled_jobs ENABLE ROW LEVEL SECURITY;
    ALTER TABLE scheduled_jobs FORCE ROW LEVEL SECURITY;
    CREATE POLICY scheduled_jobs_system ON scheduled_jobs TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE ON scheduled_jobs TO chat_system;

    -- Retention deletes the oldest rows in batches; each batch finds them by these.
    CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
    CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);
    CREATE INDEX refresh_tokens_revoked_idx ON refresh_tokens (revoked_at) WHERE revoked_at IS NOT NULL;
    CREATE INDEX mail_tokens_expires_idx ON mail_tokens (expires_at);
    CREATE INDEX mail_tokens_used_idx ON mail_tokens (used_at) WHERE used_at IS NOT NULL;
    CREATE INDEX page_views_viewed_idx ON page_views (viewed_at);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP INDEX page_views_viewed_idx; DROP INDEX mail_tokens_used_idx; DROP INDEX mail_tokens_expires_idx;
       DROP INDEX refresh_tokens_revoked_idx; DROP INDEX refresh_tokens_expires_idx; DROP INDEX idempotency_keys_created_idx;
       DROP TABLE scheduled_jobs;`,
    )
    .execute(db);
}
