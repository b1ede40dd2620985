import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import { departmentOf } from '../conversations/conversation.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Workflow, WorkflowRun } from '../db/schema.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { AppError, invalidInput, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { keysetPageOf, pageOf } from '../shared/pagination.ts';
import type { Principal } from '../shared/principal.ts';
import { SECRET_OVERLAP_MS, type WebhookPolicy, urlRefusal } from '../webhooks/webhook.service.ts';
import * as repo from './workflow.repository.ts';

type S = components['schemas'];

/** A `whsec_` secret as the standardwebhooks libraries take it: 24 random bytes, base64. */
const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export const toWorkflowDto = (w: Workflow): S['Workflow'] => ({
  id: w.id,
  name: w.name,
  enabled: w.enabled,
  trigger: w.trigger as S['WorkflowTrigger'],
  conditions: w.conditions as S['WorkflowCondition'][],
  actions: w.actions as S['WorkflowAction'][],
  created_at: w.created_at.toISOString(),
  updated_at: w.updated_at.toISOString(),
});

/** An action's outcome as stored on its run: the outcome the API shows, and the action it is of. */
export type StoredOutcome = S['WorkflowActionOutcome'] & { action: S['WorkflowAction'] };

type RunRow = Pick<WorkflowRun, 'id' | 'workflow_id' | 'event_id' | 'event_type' | 'conversation_id' | 'depth' | 'status' | 'skip_reason' | 'attempts' | 'next_attempt_at' | 'actions' | 'created_at' | 'finished_at'>;

const toRunDto = (r: RunRow): S['WorkflowRun'] => ({
  id: r.id,
  workflow_id: r.workflow_id,
  event_id: r.event_id,
  event_type: r.event_type,
  conversation_id: r.conversation_id,
  depth: r.depth,
  status: r.status,
  skip_reason: r.skip_reason,
  attempts: r.attempts,
  next_attempt_at: r.next_attempt_at?.toISOString() ?? null,
  actions: (r.actions as unknown as StoredOutcome[]).map(({ action: _action, ...outcome }): S['WorkflowActionOutcome'] => outcome),
  created_at: r.created_at.toISOString(),
  finished_at: r.finished_at?.toISOString() ?? null,
});

const PRIORITIES = ['low', 'normal', 'high', 'urgent'];
const STATUSES = ['open', 'assigned', 'closed'];
const SENDER_TYPES = ['visitor', 'user', 'bot', 'system'];
/** The values a field can take, where the contract knows them: a typo is a 400, not a workflow that never runs. */
const KNOWN_VALUES: Record<string, string[]> = {
  'conversation.priority': PRIORITIES,
  'conversation.status': STATUSES,
  'message.sender_type': SENDER_TYPES,
  'conversation.business_hours': ['open', 'closed'],
};

type FieldError = { field: string; message: string };

/** What the contract cannot say: which operator takes which value, on which field, with which trigger. */
export function conditionErrors(trigger: S['WorkflowTrigger'], conditions: S['WorkflowCondition'][]): FieldError[] {
  const errors: FieldError[] = [];
  conditions.forEach((c, i) => {
    const at = (suffix: string) => `conditions/${i}/${suffix}`;
    const { value } = c;
    if (c.field.startsWith('message.') && trigger.type !== 'message.created') {
      errors.push({ field: at('field'), message: 'message fields need the message.created trigger' });
    }
    if (c.operator === 'is_set' || c.operator === 'is_not_set') {
      if (value !== undefined) errors.push({ field: at('value'), message: `must be left out with ${c.operator}` });
      return;
    }
    if (value === undefined) {
      errors.push({ field: at('value'), message: `is required with ${c.operator}` });
      return;
    }
    if (c.operator === 'in' || c.operator === 'not_in') {
      if (!Array.isArray(value) || value.length === 0) errors.push({ field: at('value'), message: `must be a non-empty list with ${c.operator}` });
    } else if (Array.isArray(value)) {
      errors.push({ field: at('value'), message: `must be a single value with ${c.operator}` });
    } else if ((c.operator === 'contains' || c.operator === 'not_contains') && typeof value !== 'string') {
      errors.push({ field: at('value'), message: `must be a string with ${c.operator}` });
    }
    if (c.field === 'conversation.labels' && c.operator !== 'contains' && c.operator !== 'not_contains') {
      errors.push({ field: at('operator'), message: 'must be contains, not_contains, is_set or is_not_set for conversation.labels' });
    }
    if (c.field === 'conversation.assigned') {
      if (c.operator !== 'equals' && c.operator !== 'not_equals') errors.push({ field: at('operator'), message: 'must be equals or not_equals for conversation.assigned' });
      else if (typeof value !== 'boolean') errors.push({ field: at('value'), message: 'must be true or false for conversation.assigned' });
    }
    const known = KNOWN_VALUES[c.field];
    if (known) {
      const given = Array.isArray(value) ? value : [value];
      const unknown = given.filter((v) => typeof v !== 'string' || !known.includes(v));
      if (unknown.length > 0 && c.operator !== 'contains' && c.operator !== 'not_contains') {
        errors.push({ field: at('value'), message: `must be one of ${known.join(', ')}` });
      }
    }
  });
  return errors;
}

export class WorkflowService {
  readonly #database: Database;
  readonly #policy: WebhookPolicy;

  readonly #changeListeners = new Set<() => void>();

  constructor(deps: { database: Database; policy: WebhookPolicy }) {
    this.#database = deps.database;
    this.#policy = deps.policy;
  }

  async #check(trx: Tx, trigger: S['WorkflowTrigger'], conditions: S['WorkflowCondition'][], actions: S['WorkflowAction'][]) {
    const errors = conditionErrors(trigger, conditions);
    actions.forEach((action, i) => {
      if (action.type !== 'webhook') return;
      const refusal = urlRefusal(action.url, this.#policy);
      if (refusal) errors.push({ field: `actions/${i}/url`, message: refusal });
    });
    if (errors.length > 0) throw invalidInput(...errors);
    for (const action of actions) {
      if (action.type === 'transfer' && !(await departmentOf(trx, action.department_id))) {
        throw new AppError('ERR_INVALID_DEPARTMENT', 'The department does not belong to this account');
      }
    }
  }

  async list(principal: Principal, page: { limit: number; offset: number }): Promise<S['WorkflowList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listWorkflows(trx, page));
    return { data: rows.map(toWorkflowDto), pagination: pageOf(total, page, rows.length) };
  }

  /** Told after a workflow was created or changed through this instance (the runner's TenantInterest). */
  onWorkflowsChanged(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  async get(principal: Principal, id: string): Promise<S['Workflow']> {
    const workflow = await this.#database.withTenant(principal.tenantId, (trx) => repo.findWorkflow(trx, id));
    if (!workflow) throw notFound('Workflow');
    return toWorkflowDto(workflow);
  }

  async create(principal: Principal, input: S['WorkflowCreate']): Promise<S['WorkflowWithSecret']> {
    const conditions = input.conditions ?? [];
    const workflow = await this.#database.withTenant(principal.tenantId, async (trx) => {
      await this.#check(trx, input.trigger, conditions, input.actions);
      return repo.insertWorkflow(trx, {
        id: newId('workflow'),
        tenant_id: principal.tenantId,
        name: input.name,
        enabled: input.enabled ?? true,
        trigger_type: input.trigger.type,
        trigger: input.trigger,
        conditions,
        actions: input.actions,
        secret: newSigningSecret(),
        now: new Date(),
      });
    });
    for (const listener of this.#changeListeners) listener();
    return { ...toWorkflowDto(workflow), secret: workflow.secret };
  }

  async update(principal: Principal, id: string, input: S['WorkflowUpdate']): Promise<S['Workflow']> {
    const dto = await this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findWorkflow(trx, id);
      if (!current) throw notFound('Workflow');
      // Only what changes is checked: a workflow whose department was deleted since can still be disabled.
      if (input.trigger !== undefined || input.conditions !== undefined || input.actions !== undefined) {
        const trigger = input.trigger ?? (current.trigger as S['WorkflowTrigger']);
        await this.#check(trx, trigger, input.conditions ?? (current.conditions as S['WorkflowCondition'][]), input.actions ?? []);
      }
      const updated = await repo.updateWorkflow(
        trx,
        id,
        {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
          ...(input.trigger !== undefined ? { trigger: input.trigger, trigger_type: input.trigger.type } : {}),
          ...(input.conditions !== undefined ? { conditions: input.conditions } : {}),
          ...(input.actions !== undefined ? { actions: input.actions } : {}),
        },
        new Date(),
      );
      return toWorkflowDto(updated!);
    });
    for (const listener of this.#changeListeners) listener();
    return dto;
  }

  /** A new signing secret; the old one signs beside it for SECRET_OVERLAP_MS, as a webhook's does. */
  async rotateSecret(principal: Principal, id: string): Promise<S['WebhookSecret']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const now = new Date();
      const expiresAt = new Date(now.getTime() + SECRET_OVERLAP_MS);
      const secret = newSigningSecret();
      if (!(await repo.rotateWorkflowSecret(trx, id, secret, expiresAt, now))) throw notFound('Workflow');
      return { secret, previous_secret_expires_at: expiresAt.toISOString() };
    });
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteWorkflow(trx, id));
    if (!deleted) throw notFound('Workflow');
    return { id, deleted: true };
  }

  async listRuns(
    principal: Principal,
    workflowId: string,
    filter: { status?: S['WorkflowRunStatus'] | undefined },
    page: { limit: number; cursor?: string | undefined },
  ): Promise<S['WorkflowRunList']> {
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    const { rows, hasMore, total } = await this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findWorkflow(trx, workflowId))) throw notFound('Workflow');
      return repo.listRuns(trx, workflowId, filter, { limit: page.limit, ...(before ? { before } : {}) });
    });
    return {
      data: rows.map(toRunDto),
      pagination: keysetPageOf(rows, { limit: page.limit, hasMore, total }, (last) => encodeCursor(last.created_at, last.id)),
    };
  }
}
