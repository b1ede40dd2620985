import type { Tx } from '../db/database.ts';
import { openSecondsBetween } from './business-time.ts';
import * as repo from './facts.repository.ts';

// The write side of reports (DESIGN 18): each hook runs in the transaction of the change it describes,
// called by one line from where that change is made, so a fact exists exactly when its change committed.
// A message's facts are written by triggers on its insert, in its own statement (a send is mostly round
// trips); a reply's only come here where business hours apply.
//
// What is measured (durations in seconds; each also within business hours when the conversation's
// department, or the tenant, has hours):
// - first_response: the visitor's first message to the first reply a member writes (not a note);
// - response: every reply of a member that answers waiting visitor messages, from the oldest of them;
// - resolution: every close, from the start or from the reopen before it;
// - reopen, handoff (a bot handing over; seconds: how long the bot held it), survey (sent at a close),
//   csat (value: the rating; written by a trigger on surveys when the visitor answers);
// - queue_wait: from entering the queue (created unassigned, reopened, handed off to nobody) to the first
//   assignment after it. The assignment time is kept by a trigger (every way of assigning sets it); the
//   fact is written by the next reply or close, which can count business hours, dated at the assignment.

type Context = repo.FactsContext;

// On, always, except in scripts/bench/reports.ts, which measures what writing facts costs a send and a
// close by turning these hooks off (and the facts' triggers, in its own database) in the same run.
let hooksOn = true;
export function setFactHooksForBenchmark(on: boolean): void {
  hooksOn = on;
}

const seconds = (from: Date, to: Date) => Math.max(0, (to.getTime() - from.getTime()) / 1000);
const businessSeconds = (ctx: Context, from: Date, to: Date) => (ctx.hours ? openSecondsBetween(ctx.hours, from, to > from ? to : from) : null);

function duration(ctx: Context, base: Omit<repo.NewFact, 'seconds' | 'bh_seconds'>, from: Date, to: Date): repo.NewFact {
  return { ...base, seconds: seconds(from, to), bh_seconds: businessSeconds(ctx, from, to) };
}

/** The queue's wait, once its assignment is known and not yet counted. */
function queueWait(ctx: Context, conversation: { id: string; tenant_id: string }): repo.NewFact | undefined {
  if (!ctx.queued_since || !ctx.first_assigned_at || ctx.queue_wait_recorded) return undefined;
  const at = ctx.first_assigned_at;
  return duration(ctx, { tenant_id: conversation.tenant_id, conversation_id: conversation.id, kind: 'queue_wait', at, department_id: ctx.department_id, agent_id: ctx.assigned_user_id }, ctx.queued_since, at);
}

/**
 * A member's reply (a visible text) where business hours apply, the facts' trigger on the message's insert
 * having found something to count (migration 2026-12-06T09-00-00, which writes them itself where no hours
 * apply, and marks the visitor's wait for a visitor's message): the state the trigger locked, and the
 * facts and the new state in one more statement.
 */
export async function factsOnReplyWithHours(trx: Tx, conversation: { id: string; tenant_id: string }, agentId: string | null, now: Date): Promise<void> {
  if (!hooksOn) return;
  const ctx = await repo.lockFactsContext(trx, conversation.id);
  if (!ctx) return;
  const facts: repo.NewFact[] = [];
  const base = { tenant_id: conversation.tenant_id, conversation_id: conversation.id, at: now, department_id: ctx.department_id, agent_id: agentId };
  const wait = queueWait(ctx, conversation);
  if (wait) facts.push(wait);
  const firstResponse = !ctx.first_response_at && ctx.first_visitor_at !== null;
  if (firstResponse) facts.push(duration(ctx, { ...base, kind: 'first_response' }, ctx.first_visitor_at!, now));
  if (ctx.awaiting_since) facts.push(duration(ctx, { ...base, kind: 'response' }, ctx.awaiting_since, now));
  await repo.writeFacts(trx, conversation.id, facts, {
    awaiting_since: null,
    ...(firstResponse ? { first_response_at: now } : {}),
    ...(wait ? { queue_wait_recorded: true } : {}),
  });
}

/** The conversation was closed (with a survey sent, or not): one statement (two where business hours apply). */
export async function factsOnClose(trx: Tx, conversation: { id: string; tenant_id: string }, now: Date, survey: boolean): Promise<void> {
  if (!hooksOn) return;
  const ctx = await repo.recordClose(trx, { tenantId: conversation.tenant_id, conversationId: conversation.id, at: now, survey });
  if (!ctx) return;
  const base = { tenant_id: conversation.tenant_id, conversation_id: conversation.id, at: now, department_id: ctx.department_id, agent_id: ctx.assigned_user_id };
  const facts: repo.NewFact[] = [duration(ctx, { ...base, kind: 'resolution' }, ctx.opened_at, now)];
  if (survey) facts.push({ ...base, kind: 'survey' });
  const wait = queueWait(ctx, conversation);
  if (wait) facts.push(wait);
  await repo.writeFacts(trx, conversation.id, facts, { closed_at: now, awaiting_since: null, queued_since: null, ...(wait ? { queue_wait_recorded: true } : {}) });
}

/** The conversation was reopened: open and unassigned, it waits in the queue again. One statement. */
export async function factsOnReopen(trx: Tx, conversation: { id: string; tenant_id: string }, now: Date): Promise<void> {
  if (!hooksOn) return;
  await repo.recordReopen(trx, { tenantId: conversation.tenant_id, conversationId: conversation.id, at: now });
}

/** A bot handed the conversation to the team (to `assignee`, or to the queue). The team's clock starts now. */
export async function factsOnHandoff(trx: Tx, conversation: { id: string; tenant_id: string }, assignee: string | null, now: Date): Promise<void> {
  if (!hooksOn) return;
  const ctx = await repo.lockFactsContext(trx, conversation.id);
  if (!ctx) return;
  const handoff = duration(ctx, { tenant_id: conversation.tenant_id, conversation_id: conversation.id, kind: 'handoff', at: now, department_id: ctx.department_id, agent_id: assignee }, ctx.created_at, now);
  await repo.writeFacts(trx, conversation.id, [handoff], {
    queued_since: assignee ? null : now,
    first_assigned_at: null,
    queue_wait_recorded: false,
    ...(ctx.awaiting_since ? { awaiting_since: now } : {}),
  });
}
