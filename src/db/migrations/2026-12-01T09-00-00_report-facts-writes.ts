// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// What writing the report facts costs a send (issue 44's goal: at most 10% of its throughput). A visitor's
// message marks the conversation as waiting for an answer: a trigger on the message's insert does it, in
// the same statement, instead of a statement of its own from the app (src/reports/facts.ts). Only a
// visible text message of the visitor counts, as there.
//
// report_grid() (migration 2026-11-30T10-00-00) again as one expression with no FROM, so that PostgreSQL
// inlines it where it is called (each fact's rollup trigger, and a report read from the facts) instead
// of running a function per row: the same values.
//
// Search (src/search/): under row-level security PostgreSQL uses an index only for conditions it knows
// leak nothing (leakproof operators) before the policy's check; full text's @@ and ILIKE are not, so a
// search read every message of the tenant. search_messages() finds the messages of the tenant the
// transaction is set to (app.tenant_id, exactly as the policy reads it; the caller cannot name another)
// with the owner's rights, so that the indexes apply: by their words or words they begin (the full-text
// index), and by parts of words (trigrams) only when none has them, since an order number's trigrams
// ('ord', '123', ...) are in most messages of a large tenant.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    CREATE OR REPLACE FUNCTION report_grid(s double precision) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT CASE WHEN ceil(s) < 1000 THEN ceil(s)::bigint
        ELSE ((ceil(s)::bigint + power(10, length(ceil(s)::bigint::text) - 3)::bigint - 1) / power(10, length(ceil(s)::bigint::text) - 3)::bigint)
             * power(10, length(ceil(s)::bigint::text) - 3)::bigint END
    $fn$;

    CREATE FUNCTION search_messages(tsq tsquery, pattern text, public_only boolean)
      RETURNS TABLE (id text, conversation_id text, content text, created_at timestamptz)
      LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      WITH words AS (
        SELECT m.id, m.conversation_id, m.content, m.created_at FROM messages m
        WHERE m.tenant_id = current_setting('app.tenant_id', true) AND to_tsvector('simple', m.content) @@ tsq
          AND NOT (public_only AND m.internal)
      )
      SELECT * FROM words
      UNION ALL
      SELECT m.id, m.conversation_id, m.content, m.created_at FROM messages m
      WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.content ILIKE pattern
        AND NOT (public_only AND m.internal) AND NOT EXISTS (SELECT 1 FROM words)
    $fn$;
    REVOKE ALL ON FUNCTION search_messages(tsquery, text, boolean) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_messages(tsquery, text, boolean) TO chat_app, chat_system;

    CREATE FUNCTION conversation_facts_visitor() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE conversation_facts
      SET awaiting_since = coalesce(awaiting_since, NEW.created_at), first_visitor_at = coalesce(first_visitor_at, NEW.created_at)
      WHERE conversation_id = NEW.conversation_id;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER conversation_facts_visitor AFTER INSERT ON messages
      FOR EACH ROW WHEN (NEW.sender_type = 'visitor' AND NEW.type = 'text' AND NOT NEW.internal)
      EXECUTE FUNCTION conversation_facts_visitor();
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TRIGGER conversation_facts_visitor ON messages; DROP FUNCTION conversation_facts_visitor();
       DROP FUNCTION search_messages(tsquery, text, boolean);
       CREATE OR REPLACE FUNCTION report_grid(s double precision) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
         SELECT CASE WHEN c < 1000 THEN c ELSE ((c + d - 1) / d) * d END
         FROM (SELECT c, power(10, length(c::text) - 3)::bigint AS d FROM (SELECT ceil(s)::bigint AS c) AS x) AS y
       $fn$;`,
    )
    .execute(db);
}
