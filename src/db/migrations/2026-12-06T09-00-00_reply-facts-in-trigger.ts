// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// What writing the report facts costs a send (issue 44: at most 10% of its throughput). A member's reply
// wrote its facts (the queue's wait, the first response, the response to the visitor's oldest unanswered
// message) in a statement of its own after the message's insert: a round trip and a statement's start
// per reply, most of what the facts cost a send. A trigger on the message's insert now writes them in the
// message's own statement, for the reply the app wrote that statement for (a visible text of a member).
//
// Durations within business hours are counted by the app (its schedules: IANA zones, overrides, periods
// past midnight), not here. Where hours apply and there is something to count, the trigger writes nothing
// and tells the app, in the same statement's answer: it sets app.reply_facts_due to the message's id (a
// setting of the transaction), which the insert's RETURNING reads. RETURNING is computed after a BEFORE
// ROW trigger, hence BEFORE (an AFTER trigger runs once the answer is made). The id, not a flag, so that a
// later message of the same transaction never reads an earlier one's answer. The app then locks the same
// state and writes the facts and the state itself, as before.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    CREATE FUNCTION conversation_facts_reply() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      o record;
    BEGIN
      SELECT f.queued_since, f.first_assigned_at, f.awaiting_since, f.first_visitor_at, c.department_id, c.assigned_user_id,
        coalesce(d.business_hours, t.business_hours) IS NOT NULL AS hours,
        (f.queued_since IS NOT NULL AND f.first_assigned_at IS NOT NULL AND NOT f.queue_wait_recorded) AS wait,
        (f.first_response_at IS NULL AND f.first_visitor_at IS NOT NULL) AS first_response
      INTO o
      FROM conversation_facts f
      JOIN conversations c ON c.id = f.conversation_id
      JOIN tenants t ON t.id = c.tenant_id
      LEFT JOIN departments d ON d.id = c.department_id
      WHERE f.conversation_id = NEW.conversation_id
      FOR UPDATE OF f;
      IF NOT FOUND OR NOT (o.wait OR o.first_response OR o.awaiting_since IS NOT NULL) THEN
        RETURN NEW;
      END IF;
      IF o.hours THEN
        PERFORM set_config('app.reply_facts_due', NEW.id, true);
        RETURN NEW;
      END IF;
      INSERT INTO report_facts (tenant_id, conversation_id, kind, at, department_id, agent_id, seconds)
      SELECT NEW.tenant_id, NEW.conversation_id, x.kind, x.at, o.department_id, x.agent_id,
        CASE WHEN x.since IS NULL THEN NULL ELSE greatest(0, extract(epoch from x.at) - extract(epoch from x.since))::float8 END
      FROM (VALUES
        (1, 'queue_wait', o.first_assigned_at, o.assigned_user_id, o.queued_since, o.wait),
        (2, 'first_response', NEW.created_at, NEW.sender_id, o.first_visitor_at, o.first_response),
        (3, 'response', NEW.created_at, NEW.sender_id, o.awaiting_since, o.awaiting_since IS NOT NULL)
      ) AS x (ord, kind, at, agent_id, since, wanted)
      WHERE x.wanted
      ORDER BY x.ord;
      UPDATE conversation_facts
      SET awaiting_since = NULL,
        first_response_at = CASE WHEN o.first_response THEN NEW.created_at ELSE first_response_at END,
        queue_wait_recorded = queue_wait_recorded OR o.wait
      WHERE conversation_id = NEW.conversation_id;
      RETURN NEW;
    END
    $fn$;
    CREATE TRIGGER conversation_facts_reply BEFORE INSERT ON messages
      FOR EACH ROW WHEN (NEW.sender_type = 'user' AND NEW.type = 'text' AND NOT NEW.internal)
      EXECUTE FUNCTION conversation_facts_reply();
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`DROP TRIGGER conversation_facts_reply ON messages; DROP FUNCTION conversation_facts_reply();`).execute(db);
}
