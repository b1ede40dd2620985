// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Uploaded files. The bytes live in storage (local disk or S3) under storage_key; this row is the
    -- only way to them. conversation_id is set at upload or at the first message that attaches the file;
    -- attached_at stays null until a message does, and the orphan job deletes files still unattached
    -- after 24 hours.
    CREATE TABLE files (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text REFERENCES conversations (id) ON DELETE SET NULL,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
      content_type text NOT NULL CHECK (char_length(content_type) BETWEEN 1 AND 255),
      size bigint NOT NULL CHECK (size > 0),
      sha256 bytea NOT NULL CHECK (length(sha256) = 32),
      storage_key text NOT NULL UNIQUE,
      uploaded_by_type text NOT NULL CHECK (uploaded_by_type IN ('user', 'api_key', 'visitor')),
      uploaded_by_id text NOT NULL,
      attached_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    -- A tenant's storage in bytes is a sum over this index alone (billing's usage).
    CREATE INDEX files_tenant_size_idx ON files (tenant_id) INCLUDE (size);
    CREATE INDEX files_conversation_idx ON files (conversation_id) WHERE conversation_id IS NOT NULL;
    CREATE INDEX files_unattached_idx ON files (created_at) WHERE attached_at IS NULL;
    ALTER TABLE files ENABLE ROW LEVEL SECURITY;
    ALTER TABLE files FORCE ROW LEVEL SECURITY;
    CREATE POLICY files_tenant_isolation ON files TO chat_app
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
    CREATE POLICY files_system ON files TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON files TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP TABLE files;`).execute(db);
}
