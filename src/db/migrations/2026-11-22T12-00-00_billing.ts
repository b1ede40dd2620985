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
    -- A tenant's Stripe customer and the mirror of its subscription, kept by the webhook. No row: never
    -- billed. subscription_event_at is the created time of the Stripe event the mirror comes from; an
    -- older event never overwrites it (deliveries come out of order).
    CREATE TABLE billing_accounts (
      tenant_id text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
      stripe_customer_id text UNIQUE,
      stripe_subscription_id text,
      plan text,
      status text CHECK (status IN ('incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid', 'paused')),
      seats integer CHECK (seats >= 0),
      current_period_start timestamptz,
      current_period_end timestamptz,
      cancel_at_period_end boolean NOT NULL DEFAULT false,
      subscription_event_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    ${tenantTable('billing_accounts')}

    -- Invoices as Stripe last reported them; event_at as above.
    CREATE TABLE billing_invoices (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      number text,
      status text NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'uncollectible', 'void')),
      amount bigint NOT NULL,
      currency text NOT NULL,
      period_start timestamptz,
      period_end timestamptz,
      hosted_invoice_url text,
      pdf_url text,
      created_at timestamptz NOT NULL,
      event_at timestamptz NOT NULL
    );
    CREATE INDEX billing_invoices_tenant_idx ON billing_invoices (tenant_id, created_at DESC, id DESC);
    ${tenantTable('billing_invoices')}

    -- Stripe events already applied, by id: a redelivery changes nothing. Not tenant-owned (an event is
    -- matched to its tenant while it is applied); only the system role, which runs the webhook, sees it.
    CREATE TABLE stripe_events (
      id text PRIMARY KEY,
      type text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE stripe_events ENABLE ROW LEVEL SECURITY;
    ALTER TABLE stripe_events FORCE ROW LEVEL SECURITY;
    CREATE POLICY stripe_events_system ON stripe_events TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT ON stripe_events TO chat_system;

    -- Usage in a period: conversations started and messages written since its start.
    CREATE INDEX conversations_created_idx ON conversations (tenant_id, created_at);
    CREATE INDEX messages_tenant_created_idx ON messages (tenant_id, created_at);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP INDEX messages_tenant_created_idx; DROP INDEX conversations_created_idx;
       DROP TABLE stripe_events; DROP TABLE billing_invoices; DROP TABLE billing_accounts;`,
    )
    .execute(db);
}
