// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// A search ranks at most a bounded number of matches of each kind, the newest ones (issue 44: a search
// under 300 ms p99 in a tenant of ten million messages). search_messages() (migration 2026-12-01T09-00-00)
// answered every message that matched, and a word a tenant writes often, or the first letters of many
// words, matches hundreds of thousands: each was read, its words parsed again to rank it, and sorted.
//
// search_newest_messages() takes its place and answers the newest `max_rows` matches. Words most messages
// hold are found by reading the tenant's newest `newest_read` messages, newest first: enough of them match.
// Otherwise the newest matches are looked for over a day, then a week, a month, half a year and all time
// (stopping at the first span that holds enough), each span an index range of the tenant's messages by
// time combined with the full-text index, so that only the matches within it are read; a rare word is
// found through the full-text index alone. Every statement is planned for its values (EXECUTE): which
// index serves best depends on how common the words are, and a plan kept for any number of newest rows
// to read sorted all of a large tenant's messages, for seconds. Parts of words (trigrams) are looked for
// only when no word matched, as before, and bounded the same way.
//
// search_newest_contacts() does for contacts what search_messages() did for messages: under row-level
// security their full-text and trigram indexes do not apply either (their operators are not leakproof), so
// a search read every contact of the tenant. It answers the newest `max_rows` matching contacts of the
// tenant the transaction is set to, with the owner's rights: among its newest `newest_read` contacts when
// enough of them match, else every match through the indexes, sorted. (Ordered by the index of contacts
// by time, PostgreSQL read a whole large tenant's contacts for a word none of them held: it has no
// statistics to tell how common the words of a contact's text are.) A pattern (parts of words) is null when it
// has no trigram to look up, as its search would read every row.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP FUNCTION search_messages(tsquery, text, boolean);

    CREATE FUNCTION search_newest_messages(tsq tsquery, pattern text, public_only boolean, max_rows integer, newest_read integer)
      RETURNS TABLE (id text, conversation_id text, content text, created_at timestamptz)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        tenant text := current_setting('app.tenant_id', true);
        span interval;
        ids text[];
      BEGIN
        EXECUTE 'SELECT ARRAY(SELECT r.id FROM (
            SELECT m.id, m.created_at, m.content, m.internal FROM messages m WHERE m.tenant_id = $1
            ORDER BY m.created_at DESC, m.id DESC LIMIT $2
          ) AS r
          WHERE to_tsvector(''simple'', r.content) @@ $3 AND NOT ($4 AND r.internal)
          ORDER BY r.created_at DESC, r.id DESC LIMIT $5)'
          INTO ids USING tenant, newest_read, tsq, public_only, max_rows;
        IF cardinality(ids) < max_rows THEN
          FOREACH span IN ARRAY ARRAY['1 day', '7 days', '31 days', '183 days', NULL]::interval[] LOOP
            EXECUTE 'SELECT ARRAY(SELECT m.id FROM messages m WHERE m.tenant_id = $1 AND m.created_at >= $2
                       AND to_tsvector(''simple'', m.content) @@ $3 AND NOT ($4 AND m.internal)
                       ORDER BY m.created_at DESC, m.id DESC LIMIT $5)'
              INTO ids USING tenant, coalesce(now() - span, '-infinity'), tsq, public_only, max_rows;
            EXIT WHEN cardinality(ids) >= max_rows;
          END LOOP;
        END IF;
        IF cardinality(ids) = 0 AND pattern IS NOT NULL THEN
          EXECUTE 'SELECT ARRAY(SELECT m.id FROM messages m WHERE m.tenant_id = $1 AND m.content ILIKE $2 AND NOT ($3 AND m.internal)
                     ORDER BY m.created_at DESC, m.id DESC LIMIT $4)'
            INTO ids USING tenant, pattern, public_only, max_rows;
        END IF;
        RETURN QUERY SELECT m.id, m.conversation_id, m.content, m.created_at FROM messages m
          WHERE m.id = ANY(ids) ORDER BY m.created_at DESC, m.id DESC;
      END
    $fn$;
    REVOKE ALL ON FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer) TO chat_app, chat_system;

    CREATE FUNCTION search_newest_contacts(tsq tsquery, pattern text, max_rows integer, newest_read integer)
      RETURNS TABLE (id text, name text, email text, custom_attributes jsonb)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        tenant text := current_setting('app.tenant_id', true);
        document CONSTANT text := 'coalesce(k.name, '''') || '' '' || coalesce(k.email, '''') || '' '' || coalesce(k.custom_attributes::text, '''')';
        ids text[];
      BEGIN
        EXECUTE 'SELECT ARRAY(SELECT r.id FROM (
            SELECT k.id, k.created_at, ' || document || ' AS document
            FROM contacts k WHERE k.tenant_id = $1 ORDER BY k.created_at DESC, k.id DESC LIMIT $2
          ) AS r
          WHERE to_tsvector(''simple'', r.document) @@ $3 OR r.document ILIKE $4
          ORDER BY r.created_at DESC, r.id DESC LIMIT $5)'
          INTO ids USING tenant, newest_read, tsq, pattern, max_rows;
        IF cardinality(ids) < max_rows THEN
          -- Ordered by an expression no index holds: every match through the full-text and trigram indexes, then sorted.
          EXECUTE 'SELECT ARRAY(SELECT k.id FROM contacts k WHERE k.tenant_id = $1 AND (to_tsvector(''simple'', ' || document || ') @@ $2'
            || CASE WHEN pattern IS NULL THEN '' ELSE ' OR (' || document || ') ILIKE $3' END
            || ') ORDER BY k.created_at + interval ''0 seconds'' DESC, k.id DESC LIMIT $4)'
            INTO ids USING tenant, tsq, pattern, max_rows;
        END IF;
        RETURN QUERY SELECT k.id, k.name, k.email, k.custom_attributes FROM contacts k
          WHERE k.id = ANY(ids) ORDER BY k.created_at DESC, k.id DESC;
      END
    $fn$;
    REVOKE ALL ON FUNCTION search_newest_contacts(tsquery, text, integer, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_contacts(tsquery, text, integer, integer) TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP FUNCTION search_newest_contacts(tsquery, text, integer, integer);
       DROP FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer);
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
       GRANT EXECUTE ON FUNCTION search_messages(tsquery, text, boolean) TO chat_app, chat_system;`,
    )
    .execute(db);
}
