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
    CREATE TABLE webhooks (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      url text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
      events text[] NOT NULL,
      description text NOT NULL DEFAULT '',
      enabled boolean NOT NULL DEFAULT true,
      -- Why it is disabled: 'manual' (a member), 'gone' (the receiver answered 410), 'failing' (only
      -- failures for days). NULL while enabled.
      disabled_reason text CHECK (disabled_reason IN ('manual', 'gone', 'failing')),
      disabled_at timestamptz,
      secret text NOT NULL,
      -- After a rotation the old secret keeps signing beside the new one until it expires.
      previous_secret text,
      previous_secret_expires_at timestamptz,
      -- The first failed attempt since the last success: days of nothing but failures disable the endpoint.
      failing_since timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (enabled = (disabled_reason IS NULL))
    );
    CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at, id);
    ${tenantTable('webhooks')}

    -- One delivery per (endpoint, event): the dispatcher may read an event twice, it is delivered once
    -- (and retried under the same webhook-id). The body is kept as signed, so every retry and a
    -- redelivery send the same bytes, even after the event itself is pruned.
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      event_type text NOT NULL,
      body text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      -- Failures since the delivery was (re)queued: picks the next delay of the retry schedule.
      retry_step integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      -- An attempt in flight holds the row until then; an instance that dies mid-attempt lets it run out,
      -- and the delivery is attempted again.
      locked_until timestamptz,
      lock_token text,
      last_status_code integer,
      last_error text,
      last_attempt_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      UNIQUE (webhook_id, event_id),
      CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
    );
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
    ${tenantTable('webhook_deliveries')}

    -- Feed readers of every tenant (the dispatcher): how far each has read, advanced in the transaction
    -- that writes what it made of the events. Only the system role uses it.
    CREATE TABLE feed_cursors (
      name text PRIMARY KEY CHECK (char_length(name) BETWEEN 1 AND 100),
      txid xid8 NOT NULL,
      position bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE feed_cursors ENABLE ROW LEVEL SECURITY;
    ALTER TABLE feed_cursors FORCE ROW LEVEL SECURITY;
    CREATE POLICY feed_cursors_system ON feed_cursors TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE ON feed_cursors TO chat_system;

    -- The feed across tenants, in its order (the tenant index serves one tenant's feed).
    CREATE INDEX events_feed_order_idx ON events (txid, position);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`DROP INDEX events_feed_order_idx; DROP TABLE feed_cursors; DROP TABLE webhook_deliveries; DROP TABLE webhooks;`)
    .execute(db);
}
