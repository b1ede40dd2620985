// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- When the conversation got its current assignee: the return timer counts the visitor's wait from
    -- here at the earliest. Kept by a trigger, so every way of assigning (a member, a transfer, a
    -- handoff, routing) sets it without knowing.
    ALTER TABLE conversations ADD COLUMN assigned_at timestamptz;
    UPDATE conversations SET assigned_at = updated_at WHERE assigned_user_id IS NOT NULL;
    CREATE FUNCTION conversations_assigned_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.assigned_user_id IS NULL THEN
        NEW.assigned_at := NULL;
      ELSIF TG_OP = 'INSERT' OR NEW.assigned_user_id IS DISTINCT FROM OLD.assigned_user_id THEN
        NEW.assigned_at := now();
      END IF;
      RETURN NEW;
    END;
    $$;
    CREATE TRIGGER conversations_assigned_at BEFORE INSERT OR UPDATE OF assigned_user_id ON conversations
      FOR EACH ROW EXECUTE FUNCTION conversations_assigned_at();

    -- The member the return timer took the conversation from: routing gives it to someone else.
    ALTER TABLE conversations ADD COLUMN returned_from_user_id text;

    -- The return timer's look-up: assigned conversations of departments with a timer.
    CREATE INDEX conversations_return_idx ON conversations (department_id, assigned_at) WHERE status = 'assigned';
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP INDEX conversations_return_idx;
       DROP TRIGGER conversations_assigned_at ON conversations; DROP FUNCTION conversations_assigned_at();
       ALTER TABLE conversations DROP COLUMN returned_from_user_id, DROP COLUMN assigned_at;`,
    )
    .execute(db);
}
