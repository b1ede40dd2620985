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
    -- How many workflow runs led to the change an event reports: 0 for a person's or an integration's
    -- change, n for a change made by a run started from an event of depth n - 1. Chains stop at 3.
    ALTER TABLE events ADD COLUMN workflow_depth smallint NOT NULL DEFAULT 0 CHECK (workflow_depth >= 0);

    -- conversation.idle counts from the visitor's last message (or the conversation's start without one).
    ALTER TABLE conversations ADD COLUMN last_visitor_message_at timestamptz;
    UPDATE conversations c SET last_visitor_message_at = m.at
      FROM (SELECT conversation_id, max(created_at) AS at FROM messages WHERE sender_type = 'visitor' GROUP BY conversation_id) m
      WHERE m.conversation_id = c.id;
    CREATE INDEX conversations_idle_idx ON conversations (tenant_id, (coalesce(last_visitor_message_at, created_at))) WHERE status <> 'closed';

    CREATE TABLE workflows (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
      enabled boolean NOT NULL DEFAULT true,
      -- The trigger's type alone, for the runner's lookups; the trigger itself (with its settings) beside it.
      trigger_type text NOT NULL CHECK (trigger_type IN ('conversation.created', 'conversation.closed', 'message.created', 'conversation.idle')),
      trigger jsonb NOT NULL,
      conditions jsonb NOT NULL DEFAULT '[]',
      actions jsonb NOT NULL,
      -- Signs the webhook actions' posts (Standard Webhooks); shown once, at creation.
      secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX workflows_tenant_idx ON workflows (tenant_id, created_at, id);
    CREATE INDEX workflows_trigger_idx ON workflows (tenant_id, trigger_type) WHERE enabled;
    ${tenantTable('workflows')}

    -- One run per (workflow, event): the runner may read an event twice, the workflow runs once.
    CREATE TABLE workflow_runs (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      workflow_id text NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      event_type text NOT NULL,
      -- The event's envelope as the feed gives it: what conditions read and webhook actions post.
      event_body text NOT NULL,
      conversation_id text,
      -- The depth of the changes this run makes (its event's depth + 1).
      depth smallint NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
      -- Why a skipped run did nothing: 'depth' (the chain is too long), 'conditions', 'disabled'.
      skip_reason text CHECK (skip_reason IN ('depth', 'conditions', 'disabled')),
      -- One outcome per action of the workflow as it was when the run started (with the action itself).
      actions jsonb NOT NULL DEFAULT '[]',
      attempts integer NOT NULL DEFAULT 0,
      -- Failures of the current action: picks the next delay of the retry schedule.
      retry_step integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      -- An attempt in flight holds the run until then; an instance that dies lets it run out.
      locked_until timestamptz,
      lock_token text,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      UNIQUE (workflow_id, event_id),
      CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL)),
      CHECK ((status = 'skipped') = (skip_reason IS NOT NULL))
    );
    CREATE INDEX workflow_runs_due_idx ON workflow_runs (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX workflow_runs_list_idx ON workflow_runs (workflow_id, created_at DESC, id DESC);
    ${tenantTable('workflow_runs')}

    -- conversation.idle fired for (conversation, minutes) for the visitor activity at fired_for: the idle
    -- job fires again only after newer activity, whatever restarts or instances come between.
    CREATE TABLE conversation_idle_marks (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      minutes integer NOT NULL CHECK (minutes > 0),
      fired_for timestamptz NOT NULL,
      PRIMARY KEY (conversation_id, minutes)
    );
    ${tenantTable('conversation_idle_marks')}
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TABLE conversation_idle_marks; DROP TABLE workflow_runs; DROP TABLE workflows;
       DROP INDEX conversations_idle_idx; ALTER TABLE conversations DROP COLUMN last_visitor_message_at;
       ALTER TABLE events DROP COLUMN workflow_depth;`,
    )
    .execute(db);
}
