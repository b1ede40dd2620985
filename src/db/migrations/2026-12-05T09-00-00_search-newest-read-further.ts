// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// search_newest_messages() and search_newest_contacts() (migration 2026-12-04T09-00-00) read the tenant's
// newest `newest_read` rows first and, when fewer than `max_rows` of them matched, looked through the
// indexes. A word, or the first letters of words, that one row in twenty or a hundred holds found most of
// what it needed in that first read and then paid for the full-text index's list of every row of the
// tenant that holds it (the first letters of a hundred words: hundreds of thousands of a large tenant's
// messages, for each span of time looked at), seconds where reading a few thousand rows more would do.
//
// Now the first read also tells how common the words are among the newest rows: when some matched, the
// newest rows are read again, as many as that share says hold `max_rows` matches (half as many again, as
// a share measured on a few thousand rows varies), if that is at most `read_at_most`. Otherwise, or when
// even those do not hold enough, the indexes are looked through as before. Reading a row costs a few
// times what the index costs for it, so the words read this way are those the index would give the most
// rows for; rarer ones keep the index, whose list of them is short.
//
// The answer is the same either way: the newest `max_rows` matches (the property tests of
// test/integration/search-candidates.test.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer);
    DROP FUNCTION search_newest_contacts(tsquery, text, integer, integer);

    CREATE FUNCTION search_newest_messages(tsq tsquery, pattern text, public_only boolean, max_rows integer, newest_read integer, read_at_most integer)
      RETURNS TABLE (id text, conversation_id text, content text, created_at timestamptz)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        tenant text := current_setting('app.tenant_id', true);
        newest CONSTANT text := 'SELECT ARRAY(SELECT r.id FROM (
            SELECT m.id, m.created_at, m.content, m.internal FROM messages m WHERE m.tenant_id = $1
            ORDER BY m.created_at DESC, m.id DESC LIMIT $2
          ) AS r
          WHERE to_tsvector(''simple'', r.content) @@ $3 AND NOT ($4 AND r.internal)
          ORDER BY r.created_at DESC, r.id DESC LIMIT $5)';
        further bigint;
        span interval;
        ids text[];
      BEGIN
        EXECUTE newest INTO ids USING tenant, newest_read, tsq, public_only, max_rows;
        IF cardinality(ids) BETWEEN 1 AND max_rows - 1 THEN
          further := ceil(newest_read::bigint * max_rows * 1.5 / cardinality(ids));
          IF further <= read_at_most THEN
            EXECUTE newest INTO ids USING tenant, further, tsq, public_only, max_rows;
          END IF;
        END IF;
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
    REVOKE ALL ON FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer, integer) TO chat_app, chat_system;

    CREATE FUNCTION search_newest_contacts(tsq tsquery, pattern text, max_rows integer, newest_read integer, read_at_most integer)
      RETURNS TABLE (id text, name text, email text, custom_attributes jsonb)
      LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
      DECLARE
        tenant text := current_setting('app.tenant_id', true);
        document CONSTANT text := 'coalesce(k.name, '''') || '' '' || coalesce(k.email, '''') || '' '' || coalesce(k.custom_attributes::text, '''')';
        newest CONSTANT text := 'SELECT ARRAY(SELECT r.id FROM (
            SELECT k.id, k.created_at, ' || document || ' AS document
            FROM contacts k WHERE k.tenant_id = $1 ORDER BY k.created_at DESC, k.id DESC LIMIT $2
          ) AS r
          WHERE to_tsvector(''simple'', r.document) @@ $3 OR r.document ILIKE $4
          ORDER BY r.created_at DESC, r.id DESC LIMIT $5)';
        further bigint;
        ids text[];
      BEGIN
        EXECUTE newest INTO ids USING tenant, newest_read, tsq, pattern, max_rows;
        IF cardinality(ids) BETWEEN 1 AND max_rows - 1 THEN
          further := ceil(newest_read::bigint * max_rows * 1.5 / cardinality(ids));
          IF further <= read_at_most THEN
            EXECUTE newest INTO ids USING tenant, further, tsq, pattern, max_rows;
          END IF;
        END IF;
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
    REVOKE ALL ON FUNCTION search_newest_contacts(tsquery, text, integer, integer, integer) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION search_newest_contacts(tsquery, text, integer, integer, integer) TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP FUNCTION search_newest_contacts(tsquery, text, integer, integer, integer);
       DROP FUNCTION search_newest_messages(tsquery, text, boolean, integer, integer, integer);
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
       GRANT EXECUTE ON FUNCTION search_newest_contacts(tsquery, text, integer, integer) TO chat_app, chat_system;`,
    )
    .execute(db);
}
