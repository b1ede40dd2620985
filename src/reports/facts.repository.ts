import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import type { ReportFactKind, StoredHours } from '../db/schema.ts';

// The facts reports read (DESIGN 18), written in the transaction of what they describe. Each insert into
// report_facts also adds to report_daily (a trigger): fact and rollup are one statement's work.

export interface NewFact {
  tenant_id: string;
  conversation_id: string;
  kind: ReportFactKind;
  at: Date;
  department_id: string | null;
  agent_id: string | null;
  seconds?: number | null;
  bh_seconds?: number | null;
  value?: number | null;
}

export async function insertFacts(trx: Tx, facts: NewFact[]): Promise<void> {
  if (facts.length === 0) return;
  await trx
    .insertInto('report_facts')
    .values(facts.map((f) => ({ ...f, seconds: f.seconds ?? null, bh_seconds: f.bh_seconds ?? null, value: f.value ?? null })))
    .execute();
}

/** A visitor's message: it waits for an answer from here, unless an older one already does. One statement. */
export async function visitorWrote(trx: Tx, conversationId: string, at: Date): Promise<void> {
  await trx
    .updateTable('conversation_facts')
    .set({ awaiting_since: sql`coalesce(awaiting_since, ${at}::timestamptz)`, first_visitor_at: sql`coalesce(first_visitor_at, ${at}::timestamptz)` })
    .where('conversation_id', '=', conversationId)
    .execute();
}

/**
 * The conversation's facts state, locked, with what a fact needs of the conversation now: its department,
 * assignee, and the business hours that apply (the department's own, else the tenant's; null: none).
 */
export async function lockFactsContext(trx: Tx, conversationId: string) {
  return trx
    .selectFrom('conversation_facts as f')
    .innerJoin('conversations as c', 'c.id', 'f.conversation_id')
    .innerJoin('tenants as t', 't.id', 'c.tenant_id')
    .leftJoin('departments as d', 'd.id', 'c.department_id')
    .select([
      'f.created_at',
      'f.opened_at',
      'f.queued_since',
      'f.first_assigned_at',
      'f.queue_wait_recorded',
      'f.awaiting_since',
      'f.first_visitor_at',
      'f.first_response_at',
      'c.department_id',
      'c.assigned_user_id',
    ])
    .select(sql<StoredHours | null>`coalesce(d.business_hours, t.business_hours)`.as('hours'))
    .where('f.conversation_id', '=', conversationId)
    .forUpdate('f')
    .executeTakeFirst();
}

export async function updateFactsState(
  trx: Tx,
  conversationId: string,
  changes: Partial<{
    opened_at: Date;
    queued_since: Date | null;
    first_assigned_at: Date | null;
    queue_wait_recorded: boolean;
    awaiting_since: Date | null;
    first_response_at: Date;
    closed_at: Date | null;
  }>,
  reopened = false,
): Promise<void> {
  await trx
    .updateTable('conversation_facts')
    .set({ ...changes, ...(reopened ? { reopen_count: sql<number>`reopen_count + 1` } : {}) })
    .where('conversation_id', '=', conversationId)
    .execute();
}
