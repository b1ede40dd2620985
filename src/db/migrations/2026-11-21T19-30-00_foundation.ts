// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// Three roles share the database. The connecting role owns the tables and runs migrations only.
// chat_app does request work: every tenant-owned table is filtered to the tenant named by
// app.tenant_id. chat_system does deliberate cross-tenant work (login by e-mail, relays).
// Row-level security is forced, so even the owner sees nothing it was not granted by a policy.
const tenantTable = (table: string, tenantColumn: string) => `
  ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
  ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
  CREATE POLICY ${table}_tenant_isolation ON ${table} TO chat_app
    USING (${tenantColumn} = current_setting('app.tenant_id', true))
    WITH CHECK (${tenantColumn} = current_setting('app.tenant_id', true));
  CREATE POLICY ${table}_system ON ${table} TO chat_system USING (true) WITH CHECK (true);
  GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO chat_app, chat_system;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DO $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'chat_app') THEN
        CREATE ROLE chat_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
      END IF;
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'chat_system') THEN
        CREATE ROLE chat_system NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
      END IF;
    END
    $$;
    GRANT chat_app TO CURRENT_USER;
    GRANT chat_system TO CURRENT_USER;
    GRANT USAGE ON SCHEMA public TO chat_app, chat_system;

    CREATE TABLE tenants (
      id text PRIMARY KEY CHECK (id ~ '^tn_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
      timezone text NOT NULL DEFAULT 'UTC',
      settings jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    ${tenantTable('tenants', 'id')}

    CREATE TABLE users (
      id text PRIMARY KEY CHECK (id ~ '^usr_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
      email text NOT NULL CHECK (char_length(email) <= 254),
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
      password_hash text,
      email_verified_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX users_email_key ON users (lower(email));

    CREATE TABLE memberships (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('owner', 'admin', 'agent')),
      seat text NOT NULL DEFAULT 'full' CHECK (seat IN ('full', 'lite')),
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invited')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, user_id)
    );
    CREATE INDEX memberships_user_id_idx ON memberships (user_id);
    ${tenantTable('memberships', 'tenant_id')}

    -- Users are not tenant-owned: one person can belong to many tenants. Request work sees the people
    -- of its own tenant and never their password hashes (no column grant).
    ALTER TABLE users ENABLE ROW LEVEL SECURITY;
    ALTER TABLE users FORCE ROW LEVEL SECURITY;
    CREATE POLICY users_tenant_members ON users FOR SELECT TO chat_app USING (
      EXISTS (
        SELECT 1 FROM memberships m
        WHERE m.user_id = users.id AND m.tenant_id = current_setting('app.tenant_id', true)
      )
    );
    CREATE POLICY users_system ON users TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT (id, email, name, email_verified_at, created_at, updated_at) ON users TO chat_app;
    GRANT SELECT, INSERT, UPDATE, DELETE ON users TO chat_system;

    -- Refresh tokens belong to a login, not to tenant work: only chat_system touches them.
    CREATE TABLE refresh_tokens (
      id text PRIMARY KEY,
      family_id text NOT NULL,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      token_hash bytea NOT NULL UNIQUE,
      expires_at timestamptz NOT NULL,
      rotated_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id);
    CREATE INDEX refresh_tokens_user_id_idx ON refresh_tokens (user_id);
    ${tenantTable('refresh_tokens', 'tenant_id')}
    REVOKE ALL ON refresh_tokens FROM chat_app;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP TABLE refresh_tokens; DROP TABLE memberships; DROP TABLE users; DROP TABLE tenants;`).execute(db);
}
