import type { components } from '../../generated/api.ts';
import { contactInTransaction } from '../contacts/contact.service.ts';
import type { ConversationService } from '../conversations/conversation.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Metrics, OutcomeCounter } from '../metrics/metrics.ts';
import type { EventBus } from '../events/bus.ts';
import type { FeedRow } from '../events/feed.repository.ts';
import { consumerDeps } from '../events/feed-consumer.ts';
import { FeedQueue, observeQueueDepth, type QueueConsumerOptions, type QueueSettings, queueSettings } from '../events/feed-queue.ts';
import { applicableHours, statusOf } from '../hours/hours.service.ts';
import { inTenantTransaction } from '../events/outbox.ts';
import type { Job } from '../jobs/scheduler.ts';
import type { Mailer } from '../mail/mailer.ts';
import { visitorTranscript } from '../conversations/message.service.ts';
import { envelopeOf } from '../events/envelope.ts';
import { AppError } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { type Transport, createTransport, signedHeaders } from '../delivery/transport.ts';
import { transcriptMail } from './transcript.ts';
import * as repo from './workflow.repository.ts';
import { changeConversationLabel } from '../labels/label.service.ts';
import type { StoredOutcome } from './workflow.service.ts';

type S = components['schemas'];

export const DEFAULT_RETRY_DELAYS_MS = [5_000, 30_000, 2 * 60_000, 10 * 60_000, 30 * 60_000, 3_600_000, 3 * 3_600_000, 6 * 3_600_000];
/** Runs started by a change at this depth or deeper are recorded as skipped: a chain stops at 3. */
export const MAX_WORKFLOW_DEPTH = 3;
/** The runner's row in feed_cursors. */
export const WORKFLOW_CURSOR = 'workflows';
export const IDLE_JOB = 'workflows.idle';

const TRIGGERS: repo.TriggerType[] = ['conversation.created', 'conversation.closed', 'message.created', 'conversation.idle'];

export interface RunnerOptions extends QueueConsumerOptions {
  mailer: Mailer;
  conversations: ConversationService;
  allowPrivate: boolean;
  /** A webhook action's post must be answered 2xx within this. */
  timeoutMs?: number;
  /** The delay before each retry of an action failing for a passing reason; past the last, it fails. */
  retryDelaysMs?: number[];
  transport?: Transport;
  /** The service's registry: the run queue's depth and each action's outcome. Without it nothing is reported. */
  metrics?: Metrics | undefined;
}

/** An action's outcome as counted: done, nothing to do, to be retried, or failed for good. */
export type ActionOutcome = 'succeeded' | 'skipped' | 'retrying' | 'failed';

/** A failure worth trying again (a server down, a 5xx, a timeout), or one that will not change. */
class ActionFailure extends Error {
  readonly passing: boolean;
  constructor(message: string, passing: boolean) {
    super(message);
    this.passing = passing;
  }
}

/** Nothing to do, and nothing wrong: the conversation is already closed, ... */
class ActionSkipped extends Error {}

/**
 * Runs workflows from the outbox, read by a FeedConsumer (src/events/feed-consumer.ts): each pass inserts
 * one run per (matching enabled workflow, event), unique, so a re-read starts nothing twice. Runs are
 * claimed (a FeedQueue) with SKIP LOCKED and a lease; each action's outcome is recorded under the claim's token. Actions that
 * change the conversation run in one transaction with the record of their outcome, so a crash never
 * repeats them; a mail or a post may be repeated after a crash (at least once), never lost.
 */
export class WorkflowRunner extends FeedQueue<repo.ClaimedRun> {
  readonly #o: Required<Omit<RunnerOptions, 'transport' | 'metrics' | 'interest' | 'wakeups' | keyof QueueSettings>>;
  readonly #actionCounter: OutcomeCounter<'action' | 'outcome'> | undefined;
  readonly #transport: Transport;
  readonly #ownTransport: boolean;

  constructor(options: RunnerOptions) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    super({
      ...consumerDeps(options),
      // A run's actions each take at most the timeout (mail and posts); a few of them fit in a lease.
      ...queueSettings(options, { concurrency: 8, pollMs: 1000, leaseMs: Math.max(60_000, timeoutMs * 6), batch: 200 }),
      cursor: WORKFLOW_CURSOR,
      label: 'workflow',
    });
    this.#o = { ...options, timeoutMs, retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS };
    this.#transport = options.transport ?? createTransport({ allowPrivate: options.allowPrivate, timeoutMs });
    this.#ownTransport = !options.transport;
    this.#actionCounter = options.metrics && observe(options.metrics, options.database);
  }

  /** Counts an action's outcome once it is committed; the type comes from the contract's closed set. */
  #count(action: S['WorkflowAction'], outcome: ActionOutcome): void {
    this.#actionCounter?.inc({ action: action.type, outcome });
  }

  override async stop(): Promise<void> {
    await super.stop();
    if (this.#ownTransport) this.#transport.close();
  }

  // ---- Fan-out: events into runs -------------------------------------------------------------------

  /** One fan-out transaction. Public for tests. */
  async fanOutOnce(): Promise<{ read: number; inserted: number; more: boolean; heldBack: boolean }> {
    const { queued, ...pass } = await this.readOnce();
    return { ...pass, inserted: queued };
  }

  /** One run per (matching enabled workflow, event): unique, so a re-read starts nothing twice. */
  protected override claim = repo.claimDueRuns;
  protected override logContext = (run: repo.ClaimedRun) => ({ run: run.id });

  protected override async fanOut(trx: Tx, rows: FeedRow[]): Promise<number> {
    const triggering = rows.filter((r) => (TRIGGERS as string[]).includes(r.type));
    const workflows = await repo.enabledWorkflowsOf(trx, [...new Set(triggering.map((r) => r.tenant_id))], [...new Set(triggering.map((r) => r.type as repo.TriggerType))]);
    const byTenant = Map.groupBy(workflows, (w) => w.tenant_id);
    const runs: repo.NewRun[] = [];
    for (const row of triggering) {
      for (const workflow of byTenant.get(row.tenant_id) ?? []) {
        if (!triggers(workflow, row)) continue;
        const tooDeep = row.workflow_depth >= MAX_WORKFLOW_DEPTH;
        const unmet = !tooDeep && failsOnTheEventAlone(workflow.conditions as unknown as S['WorkflowCondition'][], row);
        runs.push({
          id: newId('workflowRun'),
          tenant_id: row.tenant_id,
          workflow_id: workflow.id,
          event_id: row.id,
          event_type: row.type,
          event_body: envelopeOf(row, row.data),
          conversation_id: row.conversation_id,
          depth: row.workflow_depth + 1,
          actions: (workflow.actions as S['WorkflowAction'][]).map((action) => pendingOutcome(action, tooDeep, unmet)),
          ...(tooDeep ? { skip_reason: 'depth' as const } : unmet ? { skip_reason: 'conditions' as const } : {}),
        });
      }
    }
    return repo.insertRuns(trx, runs);
  }

  // ---- Running ---------------------------------------------------------------------------------------

  /** Goes on from the first action not done; stops at a retry, a failure, or the end. */
  protected override async attempt(run: repo.ClaimedRun, token: string): Promise<void> {
    const outcomes = run.actions as unknown as StoredOutcome[];
    const record = (trx: Parameters<typeof repo.recordRun>[0], progress: Parameters<typeof repo.recordRun>[3]) => repo.recordRun(trx, run.id, token, progress);
    const event = JSON.parse(run.event_body) as S['Event'];
    // A run that has begun finishes (or retries) with the actions it began with, even if disabled since.
    const started = outcomes.some((o) => o.attempts > 0);
    if (!started && !run.enabled) {
      const skipped = outcomes.map((o) => ({ ...o, status: 'skipped' as const, detail: 'the workflow was disabled' }));
      await this.#o.database.withTenant(run.tenant_id, (trx) => record(trx, { actions: skipped, status: 'skipped', skip_reason: 'disabled' }));
      return;
    }
    if (!started) {
      const holds = await this.#o.database.withTenant(run.tenant_id, async (trx) => {
        if (await this.#conditionsHold(trx, run, event)) return true;
        await record(trx, { actions: outcomes.map((o) => ({ ...o, status: 'skipped', detail: CONDITIONS_UNMET })), status: 'skipped', skip_reason: 'conditions' });
        return false;
      });
      if (!holds) return;
    }
    let retryStep = run.retry_step;
    for (let i = outcomes.findIndex((o) => o.status === 'pending' || o.status === 'retrying'); i !== -1 && i < outcomes.length; i++) {
      const outcome = outcomes[i]!;
      const action = outcome.action;
      const done = (status: StoredOutcome['status'], detail: string | null): StoredOutcome => ({ ...outcome, status, detail, attempts: outcome.attempts + 1, next_attempt_at: null });
      const last = i === outcomes.length - 1;
      try {
        if (isExternal(action)) {
          await this.#external(run, action, event);
          outcomes[i] = done('succeeded', null);
          const kept = await this.#o.database.withTenant(run.tenant_id, (trx) =>
            record(trx, { actions: outcomes, status: last ? 'succeeded' : 'pending', retry_step: 0, keepLease: !last }),
          );
          if (!kept) return;
          this.#count(action, 'succeeded');
        } else {
          // The change and the record of it commit together: a crash repeats neither.
          const kept = await inTenantTransaction(
            this.#o.database,
            this.#o.bus,
            run.tenant_id,
            async (trx, emit) => {
              let detail: string | null;
              let status: StoredOutcome['status'] = 'succeeded';
              try {
                detail = await this.#change(trx, emit, run, action);
              } catch (err) {
                if (!(err instanceof ActionSkipped)) throw err;
                status = 'skipped';
                detail = err.message;
              }
              outcomes[i] = done(status, detail);
              if (!(await record(trx, { actions: outcomes, status: last ? 'succeeded' : 'pending', retry_step: 0, keepLease: !last }))) throw new LeaseLost();
              return true;
            },
            { workflowDepth: run.depth },
          ).catch((err: unknown) => {
            if (err instanceof LeaseLost) return false;
            throw err;
          });
          if (!kept) return;
          this.#count(action, outcomes[i]!.status === 'skipped' ? 'skipped' : 'succeeded');
        }
        retryStep = 0;
      } catch (err) {
        const failure = asFailure(err);
        const delay = failure.passing ? this.#o.retryDelaysMs[retryStep] : undefined;
        if (delay !== undefined) {
          outcomes[i] = { ...outcome, status: 'retrying', detail: failure.message, attempts: outcome.attempts + 1, next_attempt_at: new Date(Date.now() + delay).toISOString() };
          if (await this.#o.database.withTenant(run.tenant_id, (trx) => record(trx, { actions: outcomes, status: 'pending', retryInMs: delay, retry_step: retryStep + 1 }))) {
            this.#count(action, 'retrying');
          }
          return;
        }
        const detail = failure.passing ? `${failure.message} (gave up after ${outcome.attempts + 1} attempts)` : failure.message;
        outcomes[i] = { ...outcome, status: 'failed', detail, attempts: outcome.attempts + 1, next_attempt_at: null };
        for (let j = i + 1; j < outcomes.length; j++) outcomes[j] = { ...outcomes[j]!, status: 'skipped', detail: 'an earlier action failed' };
        if (await this.#o.database.withTenant(run.tenant_id, (trx) => record(trx, { actions: outcomes, status: 'failed' }))) this.#count(action, 'failed');
        return;
      }
    }
  }

  async #conditionsHold(trx: Parameters<typeof repo.recordRun>[0], run: repo.ClaimedRun, event: S['Event']): Promise<boolean> {
    const conditions = run.conditions as unknown as S['WorkflowCondition'][];
    if (conditions.length === 0) return true;
    const conversation = run.conversation_id ? await this.#o.conversations.forWorkflow(trx, run.conversation_id) : undefined;
    const contact = conversation?.contact_id ? await contactInTransaction(trx, conversation.contact_id) : undefined;
    const message = event.type === 'message.created' ? event.data.message : undefined;
    // Inside or outside the hours of the conversation's department (or the tenant's) when the event happened.
    let hours: 'open' | 'closed' | undefined;
    if (conditions.some((c) => c.field === 'conversation.business_hours')) {
      const applicable = await applicableHours(trx, run.tenant_id, conversation?.department_id ?? null).catch(() => applicableHours(trx, run.tenant_id, null));
      hours = statusOf(applicable.hours, new Date(event.created_at)).open ? 'open' : 'closed';
    }
    return conditions.every((c) => conditionHolds(c, fieldValue(c.field, { conversation, contact, message, hours })));
  }

  /** An action that changes the conversation, in the run's transaction; answers a detail worth keeping. */
  async #change(trx: Parameters<typeof repo.recordRun>[0], emit: Parameters<Parameters<typeof inTenantTransaction>[3]>[1], run: repo.ClaimedRun, action: S['WorkflowAction']): Promise<string | null> {
    const id = run.conversation_id;
    if (!id) throw new ActionSkipped('the event is about no conversation');
    const conversations = this.#o.conversations;
    try {
      switch (action.type) {
        case 'send_message':
          await conversations.sendMessageForWorkflow(trx, emit, id, action.content);
          return null;
        case 'set_priority':
          if (!(await conversations.setPriorityForWorkflow(trx, emit, id, action.priority))) throw new ActionSkipped(`the priority was already ${action.priority}`);
          return null;
        case 'transfer':
          return `assigned to ${await conversations.transferForWorkflow(trx, emit, id, action.department_id)}`;
        case 'add_label':
        case 'remove_label':
          if (!(await changeConversationLabel(trx, emit, run.tenant_id, id, action.label_id, action.type === 'add_label'))) {
            throw new ActionSkipped(action.type === 'add_label' ? 'the conversation carried the label already' : 'the conversation did not carry the label');
          }
          return null;
        case 'close':
        case 'skip_survey':
          if (!(await conversations.closeForWorkflow(trx, emit, id, { survey: action.type === 'close' }))) throw new ActionSkipped('the conversation was already closed');
          return null;
        default:
          throw new Error(`not a conversation action: ${action.type}`);
      }
    } catch (err) {
      if (err instanceof AppError && err.code === 'ERR_CONVERSATION_CLOSED') throw new ActionSkipped('the conversation is closed');
      throw err;
    }
  }

  /** A mail or a post: outside any transaction (it may take seconds); at least once. */
  async #external(run: repo.ClaimedRun, action: S['WorkflowAction'], event: S['Event']): Promise<void> {
    if (action.type === 'webhook') {
      const outcome = await this.#transport.post(action.url, signedHeaders(event.id, run.event_body, run.previous_secret ? [run.secret, run.previous_secret] : [run.secret]), run.event_body);
      if (outcome.error === null) return;
      const status = outcome.statusCode;
      const passing = status === null ? !outcome.error.startsWith('refused') : status >= 500 || status === 408 || status === 429;
      throw new ActionFailure(outcome.error, passing);
    }
    if (action.type !== 'send_transcript') throw new Error(`not an external action: ${action.type}`);
    const id = run.conversation_id;
    if (!id) throw new ActionFailure('the event is about no conversation', false);
    const mail = await this.#o.database.withTenant(run.tenant_id, async (trx) => {
      const conversation = await this.#o.conversations.forWorkflow(trx, id);
      if (!conversation) throw new ActionFailure('the conversation no longer exists', false);
      const to = action.to ?? (conversation.contact_id ? (await contactInTransaction(trx, conversation.contact_id))?.email : undefined);
      if (!to) throw new ActionFailure('no address: the action names none and the conversation has no contact with an e-mail', false);
      return transcriptMail(to, conversation, await visitorTranscript(trx, id));
    });
    try {
      await this.#o.mailer.send(mail);
    } catch (err) {
      const code = (err as { responseCode?: number }).responseCode;
      // 5xx is the server's final word (no such mailbox, ...); 4xx and no answer at all pass.
      throw new ActionFailure(`the mail could not be sent: ${(err as Error).message}`, !(typeof code === 'number' && code >= 500));
    }
  }
}

class LeaseLost extends Error {}

/** Registers the run queue's gauges (every tenant's runs, read as the system role) and answers the action counter. */
function observe(metrics: Metrics, database: Database): OutcomeCounter<'action' | 'outcome'> {
  observeQueueDepth(metrics, database, 'workflow_runs', { pending: 'chat_workflow_runs_pending', oldestDue: 'chat_workflow_oldest_due_seconds', rows: 'workflow runs', row: 'workflow run' });
  return metrics.counter('chat_workflow_actions_total', 'Workflow actions whose outcome this instance recorded, by action type and outcome', ['action', 'outcome']);
}

const isExternal = (action: S['WorkflowAction']) => action.type === 'send_transcript' || action.type === 'webhook';

function asFailure(err: unknown): ActionFailure {
  if (err instanceof ActionFailure) return err;
  // Rules of the domain do not change on a retry (no agents in the department, the conversation gone).
  if (err instanceof AppError) return new ActionFailure(err.detail, false);
  // Anything else (the database away, ...) may pass.
  return new ActionFailure(err instanceof Error ? err.message : String(err), true);
}

const CONDITIONS_UNMET = 'the conditions did not hold';

const pendingOutcome = (action: S['WorkflowAction'], tooDeep: boolean, unmet = false): StoredOutcome => ({
  type: action.type,
  status: tooDeep || unmet ? 'skipped' : 'pending',
  detail: tooDeep ? `the chain of workflows reached depth ${MAX_WORKFLOW_DEPTH}` : unmet ? CONDITIONS_UNMET : null,
  attempts: 0,
  next_attempt_at: null,
  action,
});

/**
 * Whether a condition on the event's own message fails: such a condition reads only the event, which
 * never changes, so the run is recorded as skipped when it is made instead of being claimed and judged
 * later (two transactions fewer for each message a "message contains" workflow passes over). Conditions
 * on the conversation or the contact are judged when the run runs, on their state then.
 */
function failsOnTheEventAlone(conditions: S['WorkflowCondition'][], row: FeedRow): boolean {
  if (row.type !== 'message.created') return false;
  const message = (row.data as S['MessageCreatedData']).message;
  return conditions.some((c) => c.field.startsWith('message.') && !conditionHolds(c, fieldValue(c.field, { conversation: undefined, contact: undefined, message })));
}

/** Whether an event starts a workflow: its trigger, and only what happens after the workflow exists. */
function triggers(workflow: { trigger_type: string; trigger: Record<string, unknown>; created_at: Date }, row: FeedRow): boolean {
  if (workflow.trigger_type !== row.type || row.created_at < workflow.created_at) return false;
  if (row.type === 'conversation.idle') return (row.data as S['ConversationIdleData']).minutes === workflow.trigger.minutes;
  return true;
}

type Context = { conversation: S['Conversation'] | undefined; contact: S['Contact'] | undefined; message: S['Message'] | undefined; hours?: 'open' | 'closed' | undefined };

export function fieldValue(field: string, { conversation, contact, message, hours }: Context): unknown {
  switch (field) {
    case 'conversation.business_hours':
      return hours ?? null;
    case 'conversation.widget_id':
      return conversation?.widget_id ?? null;
    case 'conversation.department_id':
      return conversation?.department_id ?? null;
    case 'conversation.priority':
      return conversation?.priority ?? null;
    case 'conversation.status':
      return conversation?.status ?? null;
    case 'conversation.assigned':
      return conversation ? conversation.assigned_user_id !== null : null;
    case 'contact.email':
      return contact?.email ?? null;
    case 'message.content':
      return message?.content ?? null;
    case 'message.sender_type':
      return message?.sender_type ?? null;
    case 'conversation.labels':
      // The label ids it carries: `contains` one, or `is_set` (any).
      return conversation ? (conversation.labels ?? []).map((l) => l.id) : null;
  }
  const key = field.startsWith('contact.custom_attributes.') ? field.slice('contact.custom_attributes.'.length) : undefined;
  return key !== undefined ? ((contact?.custom_attributes as Record<string, unknown> | undefined)?.[key] ?? null) : null;
}

export function conditionHolds(condition: S['WorkflowCondition'], actual: unknown): boolean {
  const same = (a: unknown, b: unknown) => (typeof a === 'string' && typeof b === 'string' ? a.toLowerCase() === b.toLowerCase() : a === b);
  const { value } = condition;
  switch (condition.operator) {
    case 'is_set':
      return actual !== null && actual !== undefined && actual !== '' && !(Array.isArray(actual) && actual.length === 0);
    case 'is_not_set':
      return actual === null || actual === undefined || actual === '' || (Array.isArray(actual) && actual.length === 0);
    case 'equals':
      return same(actual, value);
    case 'not_equals':
      return !same(actual, value);
    case 'in':
      return Array.isArray(value) && value.some((v) => same(actual, v));
    case 'not_in':
      return Array.isArray(value) && !value.some((v) => same(actual, v));
    case 'contains':
      if (Array.isArray(actual)) return actual.some((a) => same(a, value));
      return typeof actual === 'string' && typeof value === 'string' && actual.toLowerCase().includes(value.toLowerCase());
    case 'not_contains':
      if (Array.isArray(actual)) return !actual.some((a) => same(a, value));
      return !(typeof actual === 'string' && typeof value === 'string' && actual.toLowerCase().includes(value.toLowerCase()));
  }
}

/**
 * The idle check, as a scheduled job (src/jobs/scheduler.ts: one instance runs it at a time, and its
 * schedule survives restarts). Per tenant and idle threshold of its enabled workflows, it writes one
 * conversation.idle per conversation that went silent that long, and marks the silence in the same
 * transaction: a restart, a second instance or a crash between batches never fires a silence twice.
 */
export function idleJob(deps: { bus: EventBus; intervalMs: number; batch?: number }): Job {
  const batch = deps.batch ?? 500;
  return {
    name: IDLE_JOB,
    intervalMs: deps.intervalMs,
    run: async (database, signal) => {
      const thresholds = await database.asSystem((trx) => repo.idleTriggers(trx));
      let fired = 0;
      for (const { tenant_id: tenantId, minutes, since } of thresholds) {
        for (;;) {
          if (signal.aborted) return { fired };
          const n = await inTenantTransaction(database, deps.bus, tenantId, async (trx, emit) => {
            const idle = await repo.idleConversations(trx, tenantId, minutes, since, batch);
            for (const c of idle) {
              await repo.markIdle(trx, { tenant_id: tenantId, conversation_id: c.id, minutes, fired_for: c.idle_since });
              await emit(
                'conversation.idle',
                { conversation_id: c.id, minutes, idle_since: new Date(c.idle_since).toISOString() },
                { conversationId: c.id, internal: true },
              );
            }
            return idle.length;
          });
          fired += n;
          if (n < batch) break;
        }
      }
      return { fired };
    },
  };
}
