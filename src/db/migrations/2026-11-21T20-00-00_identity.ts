// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// Same shape as the foundation migration's helper: the request role sees one tenant, the system role all.
const tenantTable = (table: string) => `
  ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
  ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
  CREATE POLICY ${table}_tenant_isolation ON ${table} TO chat_app
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
  CREATE POLICY ${table}_system ON ${table} TO chat_system USING (true) WITH CHECK (true);
  GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO chat_app, chat_system;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    CREATE TABLE departments (
      id uuid PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
      description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 1000),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX departments_tenant_name_key ON departments (tenant_id, lower(name));
    ${tenantTable('departments')}

    -- A department member is a member of the tenant: leaving the tenant leaves its departments.
    CREATE TABLE department_members (
      tenant_id text NOT NULL,
      department_id uuid NOT NULL REFERENCES departments (id) ON DELETE CASCADE,
      user_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (department_id, user_id),
      FOREIGN KEY (tenant_id, user_id) REFERENCES memberships (tenant_id, user_id) ON DELETE CASCADE
    );
    CREATE INDEX department_members_user_idx ON department_members (tenant_id, user_id);
    ${tenantTable('department_members')}

    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
      scopes text[] NOT NULL,
      prefix text NOT NULL,
      key_hash bytea NOT NULL UNIQUE,
      created_by text REFERENCES users (id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      rotated_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz
    );
    CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);
    ${tenantTable('api_keys')}

    -- Single-use tokens sent by mail (verification, password reset, invitation), stored hashed.
    CREATE TABLE mail_tokens (
      id text PRIMARY KEY,
      purpose text NOT NULL CHECK (purpose IN ('verify_email', 'reset_password', 'invitation')),
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      tenant_id text REFERENCES tenants (id) ON DELETE CASCADE,
      token_hash bytea NOT NULL UNIQUE,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX mail_tokens_user_idx ON mail_tokens (user_id, purpose);
    ALTER TABLE mail_tokens ENABLE ROW LEVEL SECURITY;
    ALTER TABLE mail_tokens FORCE ROW LEVEL SECURITY;
    CREATE POLICY mail_tokens_system ON mail_tokens TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON mail_tokens TO chat_system;

    -- Revoking a login family must find its tokens fast; a refresh finds its token by hash (unique).
    CREATE INDEX refresh_tokens_live_family_idx ON refresh_tokens (family_id) WHERE revoked_at IS NULL;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP INDEX refresh_tokens_live_family_idx; DROP TABLE mail_tokens; DROP TABLE api_keys;
       DROP TABLE department_members; DROP TABLE departments;`,
    )
    .execute(db);
}
