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

// DESIGN section 18: labels, snooze, search, and the facts reports read.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Labels: the tenant's own, names unique whatever their case.
    CREATE TABLE labels (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name text NOT NULL,
      color text NOT NULL,
      description text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX labels_name_idx ON labels (tenant_id, lower(name));
    ${tenantTable('labels')}

    CREATE TABLE conversation_labels (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      label_id text NOT NULL REFERENCES labels (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (conversation_id, label_id)
    );
    CREATE INDEX conversation_labels_label_idx ON conversation_labels (label_id, conversation_id);
    ${tenantTable('conversation_labels')}

    -- Snooze: set aside until a time, or until the visitor writes again (or both, whichever comes first).
    ALTER TABLE conversations ADD COLUMN snoozed_until timestamptz;
    ALTER TABLE conversations ADD COLUMN snooze_until_reply boolean NOT NULL DEFAULT false;
    -- The wake-up job's look-up: snoozes that end at a time.
    CREATE INDEX conversations_snoozed_until_idx ON conversations (snoozed_until) WHERE snoozed_until IS NOT NULL;

    -- Search: full text with the simple configuration (no language's stemming or stop words: visitors
    -- write in any language) and trigrams for parts of words. Expression indexes, not columns: rows keep
    -- their shape, and nothing has to keep a copy of the text up to date.
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX messages_fts_idx ON messages USING gin (to_tsvector('simple', content));
    CREATE INDEX messages_trgm_idx ON messages USING gin (content gin_trgm_ops);
    CREATE INDEX contacts_fts_idx ON contacts USING gin (
      to_tsvector('simple', coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(custom_attributes::text, ''))
    );
    CREATE INDEX contacts_trgm_idx ON contacts USING gin (
      (coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(custom_attributes::text, '')) gin_trgm_ops
    );

    -- Reports. What happened, written in the transaction of what it describes (never recomputed from the
    -- events feed, which is kept 7 days): one row per fact. kind: conversation, first_response, response,
    -- resolution, reopen, handoff, queue_wait, survey, csat. seconds: its duration; bh_seconds: the same
    -- counted only in the business hours of the conversation's department (null when none apply);
    -- value: a rating (csat).
    CREATE TABLE report_facts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL,
      kind text NOT NULL,
      at timestamptz NOT NULL,
      department_id uuid,
      agent_id text,
      seconds double precision,
      bh_seconds double precision,
      value integer
    );
    CREATE INDEX report_facts_range_idx ON report_facts (tenant_id, kind, at);
    CREATE INDEX report_facts_conversation_idx ON report_facts (conversation_id);
    ${tenantTable('report_facts')}
    GRANT USAGE ON SEQUENCE report_facts_id_seq TO chat_app, chat_system;

    -- Per conversation, what the next facts need: when it entered the queue, the visitor's oldest message
    -- not yet answered, whether it had its first response, when it was last opened.
    CREATE TABLE conversation_facts (
      conversation_id text PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      opened_at timestamptz NOT NULL,
      queued_since timestamptz,
      first_assigned_at timestamptz,
      queue_wait_recorded boolean NOT NULL DEFAULT false,
      awaiting_since timestamptz,
      first_visitor_at timestamptz,
      first_response_at timestamptz,
      reopen_count integer NOT NULL DEFAULT 0,
      closed_at timestamptz
    );
    ${tenantTable('conversation_facts')}

    -- Daily rollups in the tenant's time zone (as it was when the fact was written), for the tenant, each
    -- department and each agent; '' is the key of the tenant itself. Kept by a trigger on report_facts, so
    -- a fact and its rollups are one statement's work and cannot disagree.
    CREATE TABLE report_daily (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      kind text NOT NULL,
      dimension text NOT NULL,
      key text NOT NULL,
      day date NOT NULL,
      n bigint NOT NULL,
      seconds_sum double precision NOT NULL,
      bh_n bigint NOT NULL,
      bh_seconds_sum double precision NOT NULL,
      value_sum bigint NOT NULL,
      PRIMARY KEY (tenant_id, kind, dimension, key, day)
    );
    ${tenantTable('report_daily')}

    CREATE FUNCTION report_facts_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      zone text;
      local_day date;
    BEGIN
      SELECT timezone INTO zone FROM tenants WHERE id = NEW.tenant_id;
      local_day := (NEW.at AT TIME ZONE coalesce(zone, 'UTC'))::date;
      -- In key order, so that two transactions never take the same rows in opposite orders.
      INSERT INTO report_daily AS r
      SELECT NEW.tenant_id, NEW.kind, d.dimension, d.key, local_day, 1, coalesce(NEW.seconds, 0),
             CASE WHEN NEW.bh_seconds IS NULL THEN 0 ELSE 1 END, coalesce(NEW.bh_seconds, 0), coalesce(NEW.value, 0)
      FROM (VALUES ('agent', NEW.agent_id), ('department', NEW.department_id::text), ('tenant', '')) AS d (dimension, key)
      WHERE d.key IS NOT NULL
      ORDER BY d.dimension, d.key
      ON CONFLICT (tenant_id, kind, dimension, key, day) DO UPDATE
        SET n = r.n + 1, seconds_sum = r.seconds_sum + excluded.seconds_sum, bh_n = r.bh_n + excluded.bh_n,
            bh_seconds_sum = r.bh_seconds_sum + excluded.bh_seconds_sum, value_sum = r.value_sum + excluded.value_sum;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER report_facts_rollup AFTER INSERT ON report_facts FOR EACH ROW EXECUTE FUNCTION report_facts_rollup();

    -- Every way of making a conversation (members, the widget, the seed) starts its facts: a conversation
    -- fact and its state. It waits in the queue from the start unless someone or a bot has it.
    CREATE FUNCTION conversation_facts_start() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO conversation_facts (conversation_id, tenant_id, created_at, opened_at, queued_since, first_assigned_at)
      VALUES (NEW.id, NEW.tenant_id, NEW.created_at, NEW.created_at,
              CASE WHEN NEW.assigned_user_id IS NULL AND NEW.bot_state <> 'active' THEN NEW.created_at END,
              CASE WHEN NEW.assigned_user_id IS NOT NULL THEN NEW.created_at END);
      INSERT INTO report_facts (tenant_id, conversation_id, kind, at, department_id)
      VALUES (NEW.tenant_id, NEW.id, 'conversation', NEW.created_at, NEW.department_id);
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER conversation_facts_start AFTER INSERT ON conversations FOR EACH ROW EXECUTE FUNCTION conversation_facts_start();

    -- The first assignment after entering the queue, however it happens (a member, a transfer, routing):
    -- the queue's wait ends there. The fact itself is written by the next reply or close, which can count
    -- business hours.
    CREATE FUNCTION conversation_facts_assigned() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE conversation_facts SET first_assigned_at = NEW.assigned_at
      WHERE conversation_id = NEW.id AND first_assigned_at IS NULL AND queued_since IS NOT NULL;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER conversation_facts_assigned AFTER UPDATE OF assigned_user_id ON conversations
      FOR EACH ROW WHEN (NEW.assigned_user_id IS NOT NULL AND OLD.assigned_user_id IS NULL)
      EXECUTE FUNCTION conversation_facts_assigned();

    -- Conversations that exist already get their state (no facts: their history was not recorded).
    SET LOCAL ROLE chat_system;
    INSERT INTO conversation_facts (conversation_id, tenant_id, created_at, opened_at, closed_at)
    SELECT id, tenant_id, created_at, created_at, closed_at FROM conversations;
    RESET ROLE;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TRIGGER conversation_facts_assigned ON conversations; DROP FUNCTION conversation_facts_assigned();
       DROP TRIGGER conversation_facts_start ON conversations; DROP FUNCTION conversation_facts_start();
       DROP TABLE report_daily; DROP FUNCTION report_facts_rollup();
       DROP TABLE conversation_facts; DROP TABLE report_facts;
       DROP INDEX contacts_trgm_idx; DROP INDEX contacts_fts_idx; DROP INDEX messages_trgm_idx; DROP INDEX messages_fts_idx;
       DROP INDEX conversations_snoozed_until_idx;
       ALTER TABLE conversations DROP COLUMN snooze_until_reply, DROP COLUMN snoozed_until;
       DROP TABLE conversation_labels; DROP TABLE labels;`,
    )
    .execute(db);
}
