import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { EventBus } from '../events/bus.ts';
import { type Emit, inTenantTransaction } from '../events/outbox.ts';
import type { Job } from '../jobs/scheduler.ts';
import { AppError, invalidInput, notFound } from '../shared/errors.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './snooze.repository.ts';

type S = components['schemas'];
type Reason = S['ConversationUnsnoozedData']['reason'];

/** How a conversation is shown to the caller after a change (the conversations feature's view, given by app.ts). */
export type ConversationView = (principal: Principal, id: string) => Promise<S['Conversation']>;

export const SNOOZE_JOB = 'snooze-wake-up';

/**
 * Ends the conversation's snooze, if it has one, with conversation.unsnoozed: in the caller's transaction.
 * A visitor's message ends any snooze (a snooze never hides a visitor who is waiting), and so does a close.
 */
export async function endSnooze(trx: Tx, emit: Emit, conversationId: string, reason: Reason, now: Date): Promise<boolean> {
  if (!(await repo.clearSnooze(trx, conversationId, now))) return false;
  await emit('conversation.unsnoozed', { conversation_id: conversationId, reason }, { conversationId, internal: true });
  return true;
}

const closed = () => new AppError('ERR_CONVERSATION_CLOSED', 'The conversation is closed; reopen it first');

export class SnoozeService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #view: ConversationView;
  readonly #now: () => Date;

  constructor(deps: { database: Database; bus: EventBus; view: ConversationView; now?: () => Date }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#view = deps.view;
    this.#now = deps.now ?? (() => new Date());
  }

  async snooze(principal: Principal, id: string, input: S['SnoozeRequest']): Promise<S['ConversationResult']> {
    const now = this.#now();
    const until = input.until === undefined ? null : new Date(input.until);
    if (until && until.getTime() <= now.getTime()) throw invalidInput({ field: 'until', message: 'must be in the future' });
    const untilReply = input.until_reply ?? false;
    if (!until && !untilReply) throw invalidInput({ field: '', message: 'must name a time (until) or until_reply: true' });
    await inTenantTransaction(this.#database, this.#bus, principal.tenantId, async (trx, emit) => {
      const conversation = await repo.lockConversation(trx, id);
      if (!conversation) throw notFound('Conversation');
      if (conversation.status === 'closed') throw closed();
      await repo.setSnooze(trx, id, { until, untilReply }, now);
      await emit('conversation.snoozed', { conversation_id: id, snoozed_until: until?.toISOString() ?? null, snooze_until_reply: untilReply }, { conversationId: id, internal: true });
    });
    return { conversation: await this.#view(principal, id) };
  }

  async unsnooze(principal: Principal, id: string): Promise<S['ConversationResult']> {
    await inTenantTransaction(this.#database, this.#bus, principal.tenantId, async (trx, emit) => {
      if (!(await repo.lockConversation(trx, id))) throw notFound('Conversation');
      await endSnooze(trx, emit, id, 'member', this.#now());
    });
    return { conversation: await this.#view(principal, id) };
  }

  /** Brings back every conversation whose snooze time has come, each in its tenant's transaction with its event; answers how many. */
  async wakeDue(signal?: AbortSignal, batch = 200): Promise<number> {
    let woken = 0;
    for (;;) {
      const now = this.#now();
      const due = await this.#database.asSystem((trx) => repo.dueSnoozes(trx, now, batch));
      for (const { id, tenant_id: tenantId } of due) {
        if (signal?.aborted) return woken;
        const done = await inTenantTransaction(this.#database, this.#bus, tenantId, async (trx, emit) => {
          if (!(await repo.clearDueSnooze(trx, id, now))) return false;
          await emit('conversation.unsnoozed', { conversation_id: id, reason: 'time' }, { conversationId: id, internal: true });
          return true;
        });
        if (done) woken++;
      }
      if (due.length < batch) return woken;
    }
  }
}

/** The wake-up as a scheduled job (src/jobs: one instance at a time, its schedule surviving restarts). */
export function snoozeJob(snooze: SnoozeService, intervalMs: number): Job {
  return { name: SNOOZE_JOB, intervalMs, run: async (_database, signal) => ({ woken: await snooze.wakeDue(signal) }) };
}
