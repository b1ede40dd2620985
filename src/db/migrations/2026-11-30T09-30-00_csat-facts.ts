// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- A visitor's survey answer is a csat fact (src/reports/facts.ts), written in the answer's transaction
    -- whichever code records it; the conversation's department and assignee as they are then.
    CREATE FUNCTION report_facts_csat() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO report_facts (tenant_id, conversation_id, kind, at, department_id, agent_id, value)
      SELECT c.tenant_id, c.id, 'csat', NEW.answered_at, c.department_id, c.assigned_user_id, NEW.rating
      FROM conversations c WHERE c.id = NEW.conversation_id;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER report_facts_csat AFTER UPDATE OF status ON surveys
      FOR EACH ROW WHEN (NEW.status = 'answered' AND OLD.status IS DISTINCT FROM 'answered')
      EXECUTE FUNCTION report_facts_csat();
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP TRIGGER report_facts_csat ON surveys; DROP FUNCTION report_facts_csat();`).execute(db);
}
