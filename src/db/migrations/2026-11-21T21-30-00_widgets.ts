// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

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
    CREATE TABLE widgets (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
      settings jsonb NOT NULL DEFAULT '{}'::jsonb,
      identity_secret text NOT NULL,
      identity_required boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX widgets_tenant_idx ON widgets (tenant_id, created_at);
    ${tenantTable('widgets')}

    -- Host names a widget may be embedded on: lower-case ASCII, optionally '*.' for any subdomain.
    CREATE TABLE widget_domains (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      widget_id text NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
      domain text NOT NULL CHECK (domain ~ '^(\\*\\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$'),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (widget_id, domain)
    );
    CREATE INDEX widget_domains_domain_idx ON widget_domains (domain);
    ${tenantTable('widget_domains')}

    ALTER TABLE visitors ADD COLUMN widget_id text REFERENCES widgets (id) ON DELETE SET NULL;
    CREATE INDEX visitors_widget_seen_idx ON visitors (tenant_id, widget_id, last_seen_at DESC);

    CREATE TABLE page_views (
      id bigserial PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      visitor_id text NOT NULL REFERENCES visitors (id) ON DELETE CASCADE,
      url text NOT NULL CHECK (char_length(url) <= 2048),
      title text CHECK (char_length(title) <= 500),
      referrer text CHECK (char_length(referrer) <= 2048),
      viewed_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX page_views_visitor_idx ON page_views (visitor_id, viewed_at DESC);
    ${tenantTable('page_views')}
    GRANT USAGE ON SEQUENCE page_views_id_seq TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`DROP TABLE page_views; ALTER TABLE visitors DROP COLUMN widget_id; DROP TABLE widget_domains; DROP TABLE widgets;`)
    .execute(db);
}
