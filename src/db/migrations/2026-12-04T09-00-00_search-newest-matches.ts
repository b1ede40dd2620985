// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// A search ranks at most a bounded number of matches of each kind, the newest ones (issue 44: a search
// under 300 ms p99 in a tenant of ten million messages). search_messages() (migration 2026-12-01T09-00-00)
// answered every message that matched, and a word a tenant writes often, or the first letters of many
// words, matches hundreds of thousands: each was read, its words parsed again to rank it, and sorted.
//
// search_newest_messages() takes its place and answers the newest `max_rows` matches. The newest of a frequent word are found
// by looking back a day, then a week, a month, half a year (stopping at the first span that holds enough),
// each span an index range of the tenant's messages by time combined with the full-text index, so that
// only the matches within it are read; a word that is rare is found through the full-text index alone
// within the whole history. Each statement is planned for its values (EXECUTE), since which index serves
// best depends on how common the words are. Parts of words (trigrams) are looked for only when no word
// matched, as before, and bounded the same way.
//
// search_newest_contacts() does for contacts what search_messages() did for messages: under row-level
// security their full-text and trigram indexes do not apply either (their operators are not leakproof), so
// a search read every contact of the tenant. It answers the newest `max_rows` matching contacts of the
// tenant the transaction is set to, with the owner's rights. A pattern (parts of words) is null when it
// has no trigram to look up, as its search would read every row.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP FUNCTION search_messages(tsquery, text, boolean);

    CREATE FUNCTION search_newest_messages(tsq tsquery, pattern text, public_only boolean, max_rows integer)
      RETURNS TABLE (id text, conversation_id text, content text, created_at timestamptz)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        tenant text := current_setting('app.tenant_id', true);
        span interval;
        since timestamptz := '-infinity';
        found_rows integer;
      BEGIN
        FOREACH span IN ARRAY ARRAY['1 day', '7 days', '31 days', '183 days']::interval[] LOOP
          EXECUTE 'SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.tenant_id = $1 AND m.created_at >= $2
                     AND to_tsvector(''simple'', m.content) @@ $3 AND NOT ($4 AND m.internal) LIMIT $5) AS x'
            INTO found_rows USING tenant, now() - span, tsq, public_only, max_rows;
          IF found_rows >= max_rows THEN
            since := now() - span;
            EXIT;
          END IF;
        END LOOP;
        RETURN QUERY EXECUTE 'SELECT m.id, m.conversation_id, m.content, m.created_at FROM messages m
          WHERE m.tenant_id = $1 AND m.created_at >= $2 AND to_tsvector(''simple'', m.content) @@ $3 AND NOT ($4 AND m.internal)
          ORDER BY m.created_at DESC, m.id DESC LIMIT $5'
          USING tenant, since, tsq, public_only, max_rows;
        IF FOUND OR pattern IS NULL THEN
          RETURN;
        END IF;
        RETURN QUERY EXECUTE 'SELECT m.id, m.conversation_id, m.content, m.created_at FROM messages m
          WHERE m.tenant_id = $1 AND m.content ILIKE $2 AND NOT ($3 AND m.internal)
          ORDER BY m.created_at DESC, m.id DESC LIMIT $4'
          USING tenant, pattern, public_only, max_rows;
      END
    $fn$;
    REVOKE ALL ON FUNCTION search_newest_messages(tsquery, text, boolean, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_messages(tsquery, text, boolean, integer) TO chat_app, chat_system;

    CREATE FUNCTION search_newest_contacts(tsq tsquery, pattern text, max_rows integer)
      RETURNS TABLE (id text, name text, email text, custom_attributes jsonb)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        document CONSTANT text := 'coalesce(k.name, '''') || '' '' || coalesce(k.email, '''') || '' '' || coalesce(k.custom_attributes::text, '''')';
      BEGIN
        RETURN QUERY EXECUTE 'SELECT k.id, k.name, k.email, k.custom_attributes FROM contacts k
          WHERE k.tenant_id = $1 AND (to_tsvector(''simple'', ' || document || ') @@ $2'
          || CASE WHEN pattern IS NULL THEN '' ELSE ' OR (' || document || ') ILIKE $3' END
          || ') ORDER BY k.created_at DESC, k.id DESC LIMIT $4'
          USING current_setting('app.tenant_id', true), tsq, pattern, max_rows;
      END
    $fn$;
    REVOKE ALL ON FUNCTION search_newest_contacts(tsquery, text, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_contacts(tsquery, text, integer) TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP FUNCTION search_newest_contacts(tsquery, text, integer);
       DROP FUNCTION search_newest_messages(tsquery, text, boolean, integer);
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
