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
    CREATE TABLE contacts (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text,
      email text,
      phone text,
      company text,
      custom_attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX contacts_tenant_email_key ON contacts (tenant_id, lower(email)) WHERE email IS NOT NULL;
    CREATE INDEX contacts_tenant_order_idx ON contacts (tenant_id, created_at DESC, id DESC);
    ${tenantTable('contacts')}

    CREATE TABLE visitors (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text,
      email text,
      contact_id text REFERENCES contacts (id) ON DELETE SET NULL,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX visitors_tenant_seen_idx ON visitors (tenant_id, last_seen_at DESC);
    ${tenantTable('visitors')}

    CREATE TABLE conversations (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'assigned', 'closed')),
      priority text NOT NULL DEFAULT 'normal' CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
      subject text CHECK (char_length(subject) <= 200),
      visitor_id text REFERENCES visitors (id) ON DELETE SET NULL,
      contact_id text REFERENCES contacts (id) ON DELETE SET NULL,
      widget_id text,
      department_id uuid REFERENCES departments (id) ON DELETE SET NULL,
      assigned_user_id text REFERENCES users (id) ON DELETE SET NULL,
      bot_state text NOT NULL DEFAULT 'off' CHECK (bot_state IN ('active', 'handed_off', 'off')),
      last_message text,
      last_message_at timestamptz,
      last_activity_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      closed_at timestamptz,
      CHECK ((status = 'assigned') = (assigned_user_id IS NOT NULL) OR status = 'closed'),
      CHECK ((status = 'closed') = (closed_at IS NOT NULL))
    );
    -- Lists are newest activity first; each common filter has an index in that order, so a page costs
    -- the same at 10 thousand rows as at a million.
    CREATE INDEX conversations_activity_idx ON conversations (tenant_id, last_activity_at DESC, id DESC);
    CREATE INDEX conversations_status_idx ON conversations (tenant_id, status, last_activity_at DESC, id DESC);
    CREATE INDEX conversations_assignee_idx ON conversations (tenant_id, assigned_user_id, last_activity_at DESC, id DESC);
    CREATE INDEX conversations_department_idx ON conversations (tenant_id, department_id, last_activity_at DESC, id DESC);
    CREATE INDEX conversations_visitor_idx ON conversations (visitor_id);
    CREATE INDEX conversations_contact_idx ON conversations (contact_id);
    ${tenantTable('conversations')}

    CREATE TABLE messages (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      sender_type text NOT NULL CHECK (sender_type IN ('visitor', 'user', 'bot', 'system')),
      sender_id text,
      type text NOT NULL CHECK (type IN ('text', 'note', 'system', 'survey')),
      content text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 10000),
      internal boolean NOT NULL DEFAULT false,
      attachments jsonb NOT NULL DEFAULT '[]'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX messages_conversation_idx ON messages (conversation_id, created_at DESC, id DESC);
    ${tenantTable('messages')}

    CREATE TABLE read_marks (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      reader_id text NOT NULL,
      last_read_at timestamptz NOT NULL,
      PRIMARY KEY (conversation_id, reader_id)
    );
    ${tenantTable('read_marks')}

    CREATE TABLE surveys (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'expired')),
      rating integer CHECK (rating BETWEEN 1 AND 5),
      comment text CHECK (char_length(comment) <= 2000),
      created_at timestamptz NOT NULL DEFAULT now(),
      answered_at timestamptz
    );
    CREATE INDEX surveys_conversation_idx ON surveys (conversation_id, created_at DESC);
    ${tenantTable('surveys')}

    CREATE TABLE canned_responses (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      shortcut text NOT NULL CHECK (shortcut ~ '^[a-z0-9_-]{1,32}$'),
      title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
      content text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 10000),
      created_by text REFERENCES users (id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, shortcut)
    );
    ${tenantTable('canned_responses')}

    -- Replays of POST /v1/messages under one Idempotency-Key, per caller.
    CREATE TABLE idempotency_keys (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      caller_id text NOT NULL,
      key text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
      request_hash bytea NOT NULL,
      response_status integer NOT NULL,
      response_body jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, caller_id, key)
    );
    ${tenantTable('idempotency_keys')}

    -- The outbox: every event is written in the transaction of the change it reports. txid orders them
    -- by commit safety: rows of transactions older than the snapshot's xmin can no longer appear, so a
    -- reader that keeps to (txid, position) below xmin never misses one that commits late.
    CREATE TABLE events (
      position bigserial PRIMARY KEY,
      id text NOT NULL UNIQUE,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      type text NOT NULL,
      data jsonb NOT NULL,
      conversation_id text,
      internal boolean NOT NULL DEFAULT false,
      recipients text[] NOT NULL DEFAULT '{}',
      txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX events_tenant_order_idx ON events (tenant_id, txid, position);
    CREATE INDEX events_created_idx ON events (created_at);
    ${tenantTable('events')}
    GRANT USAGE ON SEQUENCE events_position_seq TO chat_app, chat_system;

    -- Transfers pick the member who waited longest since their last assignment.
    ALTER TABLE memberships ADD COLUMN last_assigned_at timestamptz;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `ALTER TABLE memberships DROP COLUMN last_assigned_at;
       DROP TABLE events; DROP TABLE idempotency_keys; DROP TABLE canned_responses; DROP TABLE surveys;
       DROP TABLE read_marks; DROP TABLE messages; DROP TABLE conversations; DROP TABLE visitors; DROP TABLE contacts;`,
    )
    .execute(db);
}
