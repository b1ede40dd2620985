// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// A conversation as answered carries the visitor's answer to its last survey (status 'answered', the
// latest answered_at). The only index on surveys by conversation is in the order they were sent, so that
// answer was found by reading every survey the conversation was ever sent, and each close sends one: a
// conversation's view grew dearer with every close. This index holds the answered ones in the order the
// view reads them.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX surveys_answered_idx ON surveys (conversation_id, answered_at DESC) WHERE status = 'answered'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX surveys_answered_idx`.execute(db);
}
