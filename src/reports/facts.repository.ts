import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { prepared } from '../db/prepared.ts';
import type { ReportFactKind, StoredHours } from '../db/schema.ts';

// The facts reports read (DESIGN 18), written in the transaction of what they describe. Each insert into
// report_facts also puts the fact in report_facts_pending (a trigger), until it is folded into its rollups.
//
// What a fact costs a send or a close is mostly its statements (issue 44: at most 10% of their
// throughput); the two below run by name (src/db/prepared.ts), planned once per connection instead of at
// every close and reopen, planning being a large share of their server time. A message needs none: the
// facts' triggers on its insert mark a visitor's wait and write a member's reply's facts (migrations
// 2026-12-01T09-00-00, 2026-12-06T09-00-00). A close and a reopen are one statement each: it locks the
// conversation's facts state, reads what the facts need, writes them and the new state. Durations within
// business hours are counted by the app (src/reports/business-time.ts), so where hours apply the statement
// (or the reply's trigger) writes nothing and answers the state it locked; the app then writes the facts
// and the state in one more statement (writeFacts).

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

/** A conversation's facts state as the next facts need it, with its department, assignee and hours. */
export interface FactsContext {
  created_at: Date;
  opened_at: Date;
  queued_since: Date | null;
  first_assigned_at: Date | null;
  queue_wait_recorded: boolean;
  awaiting_since: Date | null;
  first_visitor_at: Date | null;
  first_response_at: Date | null;
  department_id: string | null;
  assigned_user_id: string | null;
  /** The business hours that apply (the department's own, else the tenant's; null: none). */
  hours: StoredHours | null;
}

export type FactsState = Partial<{
  opened_at: Date;
  queued_since: Date | null;
  first_assigned_at: Date | null;
  queue_wait_recorded: boolean;
  awaiting_since: Date | null;
  first_response_at: Date;
  closed_at: Date | null;
}>;

/**
 * The conversation's facts state, locked, with what a fact needs of the conversation now. `wait`: a queue
 * wait ended by an assignment and not yet counted; `first_response`: the visitor wrote and nobody answered yet.
 */
const lockedContext = (conversationId: string) => sql`
  select f.conversation_id, f.created_at, f.opened_at, f.queued_since, f.first_assigned_at, f.queue_wait_recorded,
    f.awaiting_since, f.first_visitor_at, f.first_response_at, c.department_id, c.assigned_user_id,
    coalesce(d.business_hours, t.business_hours) as hours,
    (f.queued_since is not null and f.first_assigned_at is not null and not f.queue_wait_recorded) as wait,
    (f.first_response_at is null and f.first_visitor_at is not null) as first_response
  from conversation_facts f
  join conversations c on c.id = f.conversation_id
  join tenants t on t.id = c.tenant_id
  left join departments d on d.id = c.department_id
  where f.conversation_id = ${conversationId}
  for update of f`;

/** Seconds from `since` to `at`, never below 0; exact to the millisecond as the app counts them (seconds() in facts.ts). */
const secondsBetween = (since: string, at: string) =>
  sql.raw(`case when ${since} is null then null else greatest(0, extract(epoch from ${at}) - extract(epoch from ${since}))::float8 end`);

const FACT_COLUMNS = sql.raw('tenant_id, conversation_id, kind, at, department_id, agent_id, seconds');

/**
 * A close: the resolution (from the open), the survey sent with it, the queue's wait when not counted
 * yet, and the state after them. Answers the state it found when business hours apply: the app writes
 * those (writeFacts).
 */
const recordCloseStatement = prepared((db, r: { tenantId: string; conversationId: string; at: Date; survey: boolean }) => ({
  compile: () =>
    sql<FactsContext>`
    with o as (${lockedContext(r.conversationId)}),
    facts as (
      insert into report_facts (${FACT_COLUMNS})
      select ${r.tenantId}, o.conversation_id, x.kind, x.at, o.department_id, o.assigned_user_id, ${secondsBetween('x.since', 'x.at')}
      from o cross join lateral (values
        (1, 'resolution', ${r.at}::timestamptz, o.opened_at, true),
        (2, 'survey', ${r.at}::timestamptz, null, ${r.survey}::boolean),
        (3, 'queue_wait', o.first_assigned_at, o.queued_since, o.wait)
      ) as x (ord, kind, at, since, wanted)
      where o.hours is null and x.wanted
      order by x.ord
    ),
    state as (
      update conversation_facts f
      set closed_at = ${r.at}::timestamptz, awaiting_since = null, queued_since = null, queue_wait_recorded = f.queue_wait_recorded or o.wait
      from o
      where f.conversation_id = o.conversation_id and o.hours is null
    )
    select created_at, opened_at, queued_since, first_assigned_at, queue_wait_recorded, awaiting_since, first_visitor_at,
      first_response_at, department_id, assigned_user_id, hours
    from o where hours is not null
  `.compile(db),
}));

export async function recordClose(trx: Tx, r: { tenantId: string; conversationId: string; at: Date; survey: boolean }): Promise<FactsContext | undefined> {
  const { rows } = await recordCloseStatement(trx, r);
  return rows[0];
}

/** A reopen: its fact (no duration: hours do not matter), and the conversation waits in the queue again. */
const recordReopenStatement = prepared((db, r: { tenantId: string; conversationId: string; at: Date }) => ({
  compile: () => sql`
    with o as (
      select f.conversation_id, c.department_id
      from conversation_facts f join conversations c on c.id = f.conversation_id
      where f.conversation_id = ${r.conversationId}
      for update of f
    ),
    facts as (
      insert into report_facts (tenant_id, conversation_id, kind, at, department_id, agent_id)
      select ${r.tenantId}, o.conversation_id, 'reopen', ${r.at}::timestamptz, o.department_id, null from o
    )
    update conversation_facts f
    set opened_at = ${r.at}::timestamptz, closed_at = null, queued_since = ${r.at}::timestamptz, first_assigned_at = null,
      queue_wait_recorded = false, reopen_count = f.reopen_count + 1
    from o
    where f.conversation_id = o.conversation_id
  `.compile(db),
}));

export async function recordReopen(trx: Tx, r: { tenantId: string; conversationId: string; at: Date }): Promise<void> {
  await recordReopenStatement(trx, r);
}

/**
 * The conversation's facts state, locked, with what a fact needs of the conversation now: its department,
 * assignee, and the business hours that apply (the department's own, else the tenant's; null: none).
 */
export async function lockFactsContext(trx: Tx, conversationId: string): Promise<FactsContext | undefined> {
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

/** Facts the app counted (business hours), and the conversation's facts state after them: one statement. */
export async function writeFacts(trx: Tx, conversationId: string, facts: NewFact[], changes: FactsState): Promise<void> {
  const values = facts.map((f) => ({ ...f, seconds: f.seconds ?? null, bh_seconds: f.bh_seconds ?? null, value: f.value ?? null }));
  const update = trx.updateTable('conversation_facts').set(changes).where('conversation_id', '=', conversationId);
  if (values.length === 0) {
    await update.execute();
    return;
  }
  await trx
    .with('facts', (db) => db.insertInto('report_facts').values(values))
    .updateTable('conversation_facts')
    .set(changes)
    .where('conversation_id', '=', conversationId)
    .execute();
}
