import { sql } from 'kysely';
import { dbAgo, dbFromNow } from '../db/clock.ts';
import { claimDueRows } from '../events/queue.repository.ts';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
import type { WorkflowRun, WorkflowRunStatus, WorkflowSkipReason, WorkflowsTable } from '../db/schema.ts';

// ---- Workflows (tenant work, row-level security) ----------------------------------------------------

export type TriggerType = WorkflowsTable['trigger_type'];

export async function insertWorkflow(
  trx: Tx,
  row: {
    id: string;
    tenant_id: string;
    name: string;
    enabled: boolean;
    trigger_type: TriggerType;
    trigger: unknown;
    conditions: unknown[];
    actions: unknown[];
    secret: string;
    now: Date;
  },
) {
  const { now, trigger, conditions, actions, ...values } = row;
  return trx
    .insertInto('workflows')
    .values({
      ...values,
      trigger: JSON.stringify(trigger),
      conditions: JSON.stringify(conditions),
      actions: JSON.stringify(actions),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenants with an enabled workflow (the runner's TenantInterest; read as the system role). */
export async function tenantsWithEnabledWorkflows(trx: Tx): Promise<string[]> {
  const rows = await trx.selectFrom('workflows').select('tenant_id').distinct().where('enabled', '=', true).execute();
  return rows.map((r) => r.tenant_id);
}

export async function listWorkflows(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('workflows').selectAll().orderBy('created_at').orderBy('id'), page);
}

export async function findWorkflow(trx: Tx, id: string) {
  return trx.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateWorkflow(
  trx: Tx,
  id: string,
  changes: {
    name?: string;
    enabled?: boolean;
    trigger_type?: TriggerType;
    trigger?: unknown;
    conditions?: unknown[];
    actions?: unknown[];
  },
  now: Date,
) {
  const { trigger, conditions, actions, ...plain } = changes;
  return trx
    .updateTable('workflows')
    .set({
      ...plain,
      ...(trigger !== undefined ? { trigger: JSON.stringify(trigger) } : {}),
      ...(conditions !== undefined ? { conditions: JSON.stringify(conditions) } : {}),
      ...(actions !== undefined ? { actions: JSON.stringify(actions) } : {}),
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** A new signing secret, the one it replaces kept beside it until `previousExpiresAt`; false: no such workflow. */
export async function rotateWorkflowSecret(trx: Tx, id: string, secret: string, previousExpiresAt: Date, now: Date): Promise<boolean> {
  // One statement: two rotations at once each keep the secret they replaced (the row lock orders them).
  const result = await trx
    .updateTable('workflows')
    .set({ previous_secret: sql<string>`secret`, previous_secret_expires_at: previousExpiresAt, secret, updated_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function deleteWorkflow(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('workflows').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

const RUN_COLUMNS = [
  'id',
  'workflow_id',
  'event_id',
  'event_type',
  'conversation_id',
  'depth',
  'status',
  'skip_reason',
  'attempts',
  'next_attempt_at',
  'actions',
  'created_at',
  'finished_at',
] as const;

/** Newest first, going back in time from the cursor. */
export async function listRuns(
  trx: Tx,
  workflowId: string,
  filter: { status?: WorkflowRunStatus | undefined },
  page: { limit: number; before?: { at: Date; id: string } },
) {
  let base = trx.selectFrom('workflow_runs').where('workflow_id', '=', workflowId);
  if (filter.status) base = base.where('status', '=', filter.status);
  let query = base.select(RUN_COLUMNS);
  if (page.before) query = query.where(sql<boolean>`(created_at, id) < (${page.before.at}, ${page.before.id})`);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit + 1).execute();
  const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit, total };
}

// ---- conversation.idle (tenant work) -----------------------------------------------------------------

/**
 * Conversations not closed whose visitor has been silent `minutes` (counted from their last message, or
 * the start), that went idle after `since` (when the first such workflow existed: older silences never
 * fire), and for which this silence has not fired yet.
 */
export async function idleConversations(trx: Tx, tenantId: string, minutes: number, since: Date, limit: number) {
  const idleSince = sql<Date>`coalesce(c.last_visitor_message_at, c.created_at)`;
  return trx
    .selectFrom('conversations as c')
    .select(['c.id', idleSince.as('idle_since')])
    .where('c.tenant_id', '=', tenantId)
    .where('c.status', '<>', 'closed')
    .where(idleSince, '<=', dbAgo(minutes * 60_000))
    .where(sql<boolean>`${idleSince} + make_interval(mins => ${minutes}) > ${since}`)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('conversation_idle_marks as m')
            .select('m.minutes')
            .whereRef('m.conversation_id', '=', 'c.id')
            .where('m.minutes', '=', minutes)
            // Marks come back from the application in milliseconds; the column keeps microseconds.
            .where('m.fired_for', '>=', sql<Date>`date_trunc('milliseconds', ${idleSince})`),
        ),
      ),
    )
    .orderBy(idleSince)
    .limit(limit)
    .execute();
}

/** This silence has fired: the next fires only after the visitor writes again. */
export async function markIdle(trx: Tx, mark: { tenant_id: string; conversation_id: string; minutes: number; fired_for: Date }) {
  await trx
    .insertInto('conversation_idle_marks')
    .values(mark)
    .onConflict((oc) => oc.columns(['conversation_id', 'minutes']).doUpdateSet({ fired_for: mark.fired_for }))
    .execute();
}

// ---- The runner (system role, every tenant) -----------------------------------------------------------

/** The distinct idle thresholds of enabled workflows, per tenant, with when the first of them was made. */
export async function idleTriggers(trx: Tx) {
  return trx
    .selectFrom('workflows')
    .select(['tenant_id', sql<number>`(trigger->>'minutes')::int`.as('minutes'), sql<Date>`min(created_at)`.as('since')])
    .where('enabled', '=', true)
    .where('trigger_type', '=', 'conversation.idle')
    .groupBy(['tenant_id', sql`(trigger->>'minutes')::int`])
    .execute();
}

export async function enabledWorkflowsOf(trx: Tx, tenantIds: string[], triggerTypes: TriggerType[]) {
  if (tenantIds.length === 0 || triggerTypes.length === 0) return [];
  return trx
    .selectFrom('workflows')
    .select(['id', 'tenant_id', 'trigger_type', 'trigger', 'conditions', 'actions', 'created_at'])
    .where('tenant_id', 'in', tenantIds)
    .where('trigger_type', 'in', triggerTypes)
    .where('enabled', '=', true)
    .execute();
}

export interface NewRun {
  id: string;
  tenant_id: string;
  workflow_id: string;
  event_id: string;
  event_type: string;
  event_body: string;
  conversation_id: string | null;
  depth: number;
  actions: unknown[];
  /** Set for a run recorded as skipped (too deep, or conditions the event alone fails), which never runs. */
  skip_reason?: WorkflowSkipReason;
}

/** One run per (workflow, event): an event read twice still runs each workflow once. */
export async function insertRuns(trx: Tx, rows: NewRun[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await trx
    .insertInto('workflow_runs')
    .values(
      rows.map(({ actions, skip_reason, ...r }) => ({
        ...r,
        actions: JSON.stringify(actions),
        ...(skip_reason
          ? { status: 'skipped' as const, skip_reason, next_attempt_at: null, finished_at: sql<Date>`now()` }
          : { next_attempt_at: sql<Date>`now()` }),
      })),
    )
    .onConflict((oc) => oc.columns(['workflow_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
  return inserted.length;
}

export type ClaimedRun = Pick<
  WorkflowRun,
  'id' | 'tenant_id' | 'workflow_id' | 'event_id' | 'event_type' | 'event_body' | 'conversation_id' | 'depth' | 'actions' | 'attempts' | 'retry_step'
> & {
  enabled: boolean;
  conditions: Record<string, unknown>[];
  secret: string;
  /** The secret before a rotation, while its overlap lasts: it signs too. */
  previous_secret: string | null;
};

/**
 * Claims up to `limit` due runs for `leaseMs`: the run is this instance's until it records its outcome
 * or the lease runs out. SKIP LOCKED: instances claiming at once take different runs.
 */
export async function claimDueRuns(trx: Tx, limit: number, lockToken: string, leaseMs: number): Promise<ClaimedRun[]> {
  const claimed = await claimDueRows(
    trx,
    'workflow_runs',
    ['id', 'tenant_id', 'workflow_id', 'event_id', 'event_type', 'event_body', 'conversation_id', 'depth', 'actions', 'attempts', 'retry_step'],
    limit,
    lockToken,
    leaseMs,
  );
  if (claimed.length === 0) return [];
  const workflows = await trx
    .selectFrom('workflows')
    .select([
      'id',
      'enabled',
      'conditions',
      'secret',
      sql<string | null>`case when previous_secret_expires_at > now() then previous_secret end`.as('previous_secret'),
    ])
    .where('id', 'in', [...new Set(claimed.map((c) => c.workflow_id))])
    .execute();
  const byId = new Map(workflows.map((w) => [w.id, w]));
  return claimed.flatMap((c) => {
    const workflow = byId.get(c.workflow_id);
    return workflow ? [{ ...c, enabled: workflow.enabled, conditions: workflow.conditions, secret: workflow.secret, previous_secret: workflow.previous_secret }] : [];
  });
}

/**
 * Records a run's progress under the claim's token; false when this instance no longer holds it (its
 * lease ran out and another took it), and nothing is written.
 */
export async function recordRun(
  trx: Tx,
  id: string,
  lockToken: string,
  progress: {
    actions: unknown[];
    status: WorkflowRunStatus;
    skip_reason?: WorkflowSkipReason;
    /** While pending: when to go on (now for the next action, later for a retry). */
    retryInMs?: number;
    retry_step?: number;
    /** Still holding the run (more actions follow in this attempt). */
    keepLease?: boolean;
  },
): Promise<boolean> {
  const pending = progress.status === 'pending';
  const result = await trx
    .updateTable('workflow_runs')
    .set({
      actions: JSON.stringify(progress.actions),
      status: progress.status,
      skip_reason: progress.skip_reason ?? null,
      next_attempt_at: pending ? dbFromNow(progress.retryInMs ?? 0) : null,
      ...(progress.retry_step !== undefined ? { retry_step: progress.retry_step } : {}),
      ...(progress.keepLease ? {} : { locked_until: null, lock_token: null }),
      finished_at: pending ? null : sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('lock_token', '=', lockToken)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

