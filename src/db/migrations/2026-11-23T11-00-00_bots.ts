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
    CREATE TABLE bots (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
      -- 'webhook': events are posted to webhook_url; 'faq' and 'llm' run inside the service.
      kind text NOT NULL CHECK (kind IN ('webhook', 'faq', 'llm')),
      avatar_url text,
      webhook_url text,
      enabled boolean NOT NULL DEFAULT true,
      -- Signs the deliveries to webhook_url (Standard Webhooks), like a webhook endpoint's secret.
      secret text NOT NULL,
      -- Where a handoff routes when the caller names no department; NULL: the whole team.
      handoff_department_id uuid REFERENCES departments (id) ON DELETE SET NULL,
      -- The kind's own settings (llm: base_url, model, api_key, system_prompt, timeout_ms). The api_key is
      -- written, never answered.
      settings jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (kind <> 'webhook' OR webhook_url IS NOT NULL)
    );
    CREATE INDEX bots_tenant_idx ON bots (tenant_id, created_at, id);
    ${tenantTable('bots')}

    -- A bot's key is an API key with the scope 'bot' that names its bot; it goes with the bot.
    ALTER TABLE api_keys ADD COLUMN bot_id text REFERENCES bots (id) ON DELETE CASCADE;
    CREATE UNIQUE INDEX api_keys_bot_idx ON api_keys (bot_id) WHERE bot_id IS NOT NULL AND revoked_at IS NULL;

    -- The bot a conversation was given (bot_state says whether it still holds it).
    ALTER TABLE conversations ADD COLUMN bot_id text REFERENCES bots (id) ON DELETE SET NULL;

    -- Who a bot's message is from, as the visitor sees it: kept with the message, so a renamed bot does
    -- not rewrite what was said.
    ALTER TABLE messages ADD COLUMN sender_name text;
    ALTER TABLE messages ADD COLUMN sender_avatar_url text;

    -- One delivery per (bot, event), as for webhooks: attempted, retried, and for in-process kinds run,
    -- by the bot runner; the body is kept as signed.
    CREATE TABLE bot_deliveries (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      bot_id text NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
      conversation_id text NOT NULL,
      event_id text NOT NULL,
      event_type text NOT NULL,
      body text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      retry_step integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      locked_until timestamptz,
      lock_token text,
      last_status_code integer,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      UNIQUE (bot_id, event_id),
      CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
    );
    CREATE INDEX bot_deliveries_due_idx ON bot_deliveries (next_attempt_at) WHERE status = 'pending';
    ${tenantTable('bot_deliveries')}
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TABLE bot_deliveries;
       ALTER TABLE messages DROP COLUMN sender_avatar_url, DROP COLUMN sender_name;
       ALTER TABLE conversations DROP COLUMN bot_id;
       DROP INDEX api_keys_bot_idx; ALTER TABLE api_keys DROP COLUMN bot_id;
       DROP TABLE bots;`,
    )
    .execute(db);
}
