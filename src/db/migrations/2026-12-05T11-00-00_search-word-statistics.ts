// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// Which plan finds a search's matches within a span of time (search_newest_messages(), migration
// 2026-12-05T09-00-00) depends on how many messages PostgreSQL expects the words to match, and for the
// first letters of a word it counts the words it keeps statistics of that begin with them. It kept the
// 1,000 most common words of the messages' text (ten times the default statistics target of 100): in a
// large tenant whose words are spread over a few thousand, the first letters of a handful of them matched
// many times the messages it expected, and it read them all instead of combining the full-text index with
// the index by time (docs/benchmarks.md, bench:reports). With a target of 1,000 it keeps the
// 10,000 most common words of the sample; ANALYZE of the messages samples 300,000 rows instead of 30,000.
// Contacts' words (names, e-mail addresses) get the same. Both are analyzed here: autovacuum would not
// analyze a large table again before a tenth of its rows changed, and until then nothing changes.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `ALTER INDEX messages_fts_idx ALTER COLUMN 1 SET STATISTICS 1000;
       ALTER INDEX contacts_fts_idx ALTER COLUMN 1 SET STATISTICS 1000;
       ANALYZE messages;
       ANALYZE contacts;`,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `ALTER INDEX contacts_fts_idx ALTER COLUMN 1 SET STATISTICS -1;
       ALTER INDEX messages_fts_idx ALTER COLUMN 1 SET STATISTICS -1;`,
    )
    .execute(db);
}
