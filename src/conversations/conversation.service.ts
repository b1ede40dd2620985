import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { RoutingMode } from '../db/schema.ts';
import type { PlanLimits } from '../billing/billing.service.ts';
import type { EventBus } from '../events/bus.ts';
import { type Emit, inTenantTransaction } from '../events/outbox.ts';
import type { Principal } from '../shared/principal.ts';
import { appendMessage, conversationClosed } from './message.service.ts';
import type { PresenceStore } from '../presence/presence.ts';
import { callerIdOf } from '../shared/caller.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { AppError, conflict, invalidInput, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { DEFAULT_PAGE_SIZE, keysetPageOf } from '../shared/pagination.ts';
import { requireUser } from '../shared/principal.ts';
import { contactInTransaction } from '../contacts/contact.service.ts';
import { visitorExists } from '../visitors/visitor.service.ts';
import { botInTransaction, checkBotAccess } from '../bots/bot.service.ts';
import { activeMembership } from '../auth/auth.service.ts';
import * as repo from './conversation.repository.ts';
import { factsOnClose, factsOnHandoff, factsOnReopen } from '../reports/facts.ts';
import { endSnooze } from '../snooze/snooze.service.ts';

type S = components['schemas'];
type ConversationDto = S['Conversation'];

// What the visitor reads. Never a name: who works on a conversation is the team's business.
export const VISITOR_NOTICES = {
  transferred: 'Your conversation has been transferred to another agent.',
  reopened: 'This conversation has been reopened.',
  handedOff: 'You are now talking with our team. Someone will be with you shortly.',
  closed: 'This conversation has been closed.',
  survey: 'How would you rate this conversation? Answer with a rating from 1 to 5.',
} as const;

const PRESENCE_RANK = { online: 0, away: 1, offline: 2 } as const;

export const toConversationDto = (c: repo.ConversationRow): ConversationDto => ({
  id: c.id,
  status: c.status,
  priority: c.priority,
  subject: c.subject,
  visitor_id: c.visitor_id,
  contact_id: c.contact_id,
  widget_id: c.widget_id,
  department_id: c.department_id,
  assigned_to: c.assigned_user_id,
  assigned_user_id: c.assigned_user_id,
  bot_state: c.bot_state,
  last_message: c.last_message,
  last_message_at: c.last_message_at?.toISOString() ?? null,
  unread_count: Number(c.unread_count ?? 0),
  created_at: c.created_at.toISOString(),
  updated_at: c.updated_at.toISOString(),
  closed_at: c.closed_at?.toISOString() ?? null,
  satisfaction: c.satisfaction
    ? { rating: c.satisfaction.rating, comment: c.satisfaction.comment, answered_at: new Date(c.satisfaction.answered_at).toISOString() }
    : null,
  labels: c.labels,
  snoozed_until: c.snoozed_until?.toISOString() ?? null,
  snooze_until_reply: c.snooze_until_reply,
});

/** usr_<uuid> or the bare uuid, as the seed's bodies allow; always the usr_ form inside. */
/**
 * What conversations ask of routing when a transfer or a handoff hands one to a department (or the team):
 * src/routing/ sits above conversations in the feature graph, so app.ts passes it in. Without it, every
 * department picks as `manual` does.
 */
export interface ConversationRouting {
  /** In the change's transaction: `manual` (pick as before), or routing's pick by mode and capacity (null: nobody available, it waits). */
  route(trx: Tx, tenantId: string, departmentId: string | null): Promise<{ mode: RoutingMode; assignee: string | null }>;
  /** conversation.assigned by routing. */
  assigned(emit: Emit, conversationId: string, assignee: string, previous: string | null): Promise<unknown>;
  /** conversation.queued, with the queue position and since when the visitor waits. */
  queued(trx: Tx, emit: Emit, conversationId: string, departmentId: string | null, reason: 'transferred' | 'handed_off'): Promise<unknown>;
}

const MANUAL: ConversationRouting = {
  route: async () => ({ mode: 'manual', assignee: null }),
  assigned: async () => undefined,
  queued: async () => undefined,
};

export const normaliseUserRef = (ref: string) => (ref.startsWith('usr_') ? ref : `usr_${ref}`);

const userNotInTenant = () => new AppError('ERR_USER_NOT_IN_TENANT', 'The person is not an active member of the team');
const assigneeLiteSeat = () => new AppError('ERR_ASSIGNEE_LITE_SEAT', 'The person has a lite seat and cannot handle conversations');

export interface ListQuery {
  status?: S['ConversationStatus'];
  assigned_to?: string;
  department_id?: string;
  priority?: S['Priority'];
  visitor_id?: string;
  contact_id?: string;
  q?: string;
  label?: string;
  snoozed?: boolean;
  limit?: number;
  offset?: number;
  cursor?: string;
}

/** For other features' reads inside their transactions (search): conversations by id as `readerId` sees them, in the order given. */
export async function conversationsById(trx: Tx, ids: string[], readerId: string): Promise<ConversationDto[]> {
  const rows = new Map((await repo.findConversations(trx, ids, readerId)).map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const row = rows.get(id);
    return row ? [toConversationDto(row)] : [];
  });
}

/** For other features' work inside their transactions: the conversation's visitor, or undefined when it is not in this tenant. */
/** Unassigns the open conversations of a member who leaves the tenant; their ids, for the events. */
export const releaseConversationsOf = (trx: Tx, userId: string, now: Date): Promise<string[]> => repo.releaseConversationsOf(trx, userId, now);

export const conversationOf = (trx: Tx, id: string): Promise<{ visitor_id: string | null } | undefined> => repo.findConversationVisitor(trx, id);

/**
 * The list's total: exact from the counter rows when the filters are the everyday ones (status, assignee,
 * department, in any combination, or none); other filters (priority, visitor, contact, free text) are
 * counted up to a cap and estimated beyond, and the answer says so.
 */
/** The filters the counter rows answer, or undefined when others are given (those totals are counted). */
function countedOf(filters: repo.ConversationFilters): repo.CountedFilters | undefined {
  const { status, assignedUserId, departmentId, ...uncounted } = filters;
  if (Object.keys(uncounted).length > 0) return undefined;
  return { ...(status ? { status } : {}), ...(assignedUserId !== undefined ? { assignedUserId } : {}), ...(departmentId ? { departmentId } : {}) };
}

async function totalOf(trx: Tx, filters: repo.ConversationFilters): Promise<{ total: number; estimated: boolean }> {
  const counted = countedOf(filters);
  if (!counted) return repo.countConversations(trx, filters);
  return { total: await repo.countFromCounters(trx, counted), estimated: false };
}

export class ConversationService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #presence: PresenceStore;
  readonly #limits: PlanLimits;
  readonly #routing: ConversationRouting;

  constructor(deps: { database: Database; bus: EventBus; presence: PresenceStore; limits: PlanLimits; routing?: ConversationRouting }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#presence = deps.presence;
    this.#limits = deps.limits;
    this.#routing = deps.routing ?? MANUAL;
  }

  #tx<T>(principal: Principal, fn: (trx: Tx, emit: Emit) => Promise<T>) {
    return inTenantTransaction(this.#database, this.#bus, principal.tenantId, fn);
  }

  // A conversation's own answer carries its queue position and since when its visitor waits (list pages do not).
  async #load(trx: Tx, principal: Principal, id: string): Promise<ConversationDto> {
    const row = await repo.findConversationAnswer(trx, id, callerIdOf(principal));
    if (!row) throw notFound('Conversation');
    checkBotAccess(row, principal, false);
    return { ...toConversationDto(row), queue_position: row.queue_position, waiting_since: row.waiting_since === null ? null : new Date(row.waiting_since).toISOString() };
  }

  async #lock(trx: Tx, id: string) {
    const row = await repo.lockConversation(trx, id);
    if (!row) throw notFound('Conversation');
    return row;
  }

  async list(principal: Principal, query: ListQuery): Promise<S['ConversationList']> {
    if (query.cursor !== undefined && query.offset !== undefined && query.offset > 0) {
      throw invalidInput({ field: 'cursor', message: 'cannot be combined with offset' });
    }
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const offset = query.offset ?? 0;
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    const assignedUserId =
      query.assigned_to === undefined
        ? undefined
        : query.assigned_to === 'none'
          ? null
          : query.assigned_to === 'me'
            ? requireUser(principal).userId
            : query.assigned_to;
    const filters: repo.ConversationFilters = {
      ...(query.status ? { status: query.status } : {}),
      ...(assignedUserId !== undefined ? { assignedUserId } : {}),
      ...(query.department_id ? { departmentId: query.department_id } : {}),
      ...(query.priority ? { priority: query.priority } : {}),
      ...(query.visitor_id ? { visitorId: query.visitor_id } : {}),
      ...(query.contact_id ? { contactId: query.contact_id } : {}),
      ...(query.q ? { q: query.q } : {}),
      ...(query.label ? { labelId: query.label } : {}),
      ...(query.snoozed !== undefined ? { snoozed: query.snoozed } : {}),
    };
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const counted = countedOf(filters);
      const { rows, hasMore, total: read } = await repo.listConversations(trx, callerIdOf(principal), filters, { limit, offset, ...(after ? { after } : {}) }, counted);
      // The exact total came with the page (counted filters, a page with rows); otherwise it is counted apart.
      const { total, estimated } = read !== undefined ? { total: read, estimated: false } : await totalOf(trx, filters);
      return {
        data: rows.map(toConversationDto),
        pagination: {
          ...keysetPageOf(rows, { limit, hasMore, total, estimated }, (last) => encodeCursor(last.last_activity_at, last.id)),
          offset: after ? 0 : offset,
        },
      };
    });
  }

  get(principal: Principal, id: string): Promise<ConversationDto> {
    return this.#database.withTenant(principal.tenantId, (trx) => this.#load(trx, principal, id));
  }

  async create(principal: Principal, input: S['ConversationCreate']): Promise<ConversationDto> {
    if (!input.visitor_id && !input.contact_id) {
      throw invalidInput({ field: '', message: 'must name visitor_id or contact_id (or both)' });
    }
    return this.#tx(principal, async (trx, emit) => {
      if (input.visitor_id && !(await visitorExists(trx, input.visitor_id))) throw notFound('Visitor');
      if (input.contact_id && !(await contactInTransaction(trx, input.contact_id))) throw notFound('Contact');
      if (input.department_id && !(await repo.departmentExists(trx, input.department_id))) throw invalidDepartment();
      await this.#limits.assertConversationAvailable(trx, principal.tenantId);
      const now = new Date();
      const id = newId('conversation');
      // A member who opens a conversation with a first message is the one handling it.
      const assignee = principal.kind === 'user' && input.message ? principal.userId : null;
      await repo.insertConversation(trx, {
        id,
        tenant_id: principal.tenantId,
        status: assignee ? 'assigned' : 'open',
        priority: input.priority ?? 'normal',
        subject: input.subject ?? null,
        visitor_id: input.visitor_id ?? null,
        contact_id: input.contact_id ?? null,
        department_id: input.department_id ?? null,
        assigned_user_id: assignee,
        now,
      });
      if (assignee) await repo.markAssigned(trx, assignee, now);
      await emit('conversation.created', { conversation_id: id, conversation: await this.#load(trx, principal, id) }, { conversationId: id });
      if (input.message) {
        await appendMessage(
          trx,
          emit,
          { id, tenant_id: principal.tenantId },
          { sender_type: principal.kind === 'user' ? 'user' : 'bot', sender_id: callerIdOf(principal), type: 'text', content: input.message },
          now,
        );
      }
      return this.#load(trx, principal, id);
    });
  }

  async update(principal: Principal, id: string, input: S['ConversationUpdate']): Promise<ConversationDto> {
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      const now = new Date();
      // Reopening needs a user, like POST reopen; decided before anything changes.
      if (input.status === 'open' && conversation.status === 'closed') requireUser(principal);
      const changed: ('priority' | 'subject')[] = [];
      if (input.priority !== undefined && input.priority !== conversation.priority) changed.push('priority');
      if (input.subject !== undefined && input.subject !== conversation.subject) changed.push('subject');
      if (changed.length > 0) {
        await repo.updateConversation(
          trx,
          id,
          { ...(changed.includes('priority') ? { priority: input.priority! } : {}), ...(changed.includes('subject') ? { subject: input.subject ?? null } : {}) },
          now,
        );
        await emit('conversation.updated', { conversation_id: id, changed, conversation: await this.#load(trx, principal, id) }, { conversationId: id });
      }
      if (input.status === 'closed' && conversation.status !== 'closed') await this.#close(trx, emit, conversation, now);
      if (input.status === 'open' && conversation.status === 'closed') await this.#reopen(trx, emit, conversation, now);
      return this.#load(trx, principal, id);
    });
  }

  async assign(principal: Principal, id: string, userRef: string | null): Promise<ConversationDto> {
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      if (conversation.status === 'closed') throw conversationClosed();
      const assignee = userRef === null ? null : normaliseUserRef(userRef);
      if (assignee) await assertCanHandle(trx, principal.tenantId, assignee);
      const now = new Date();
      await repo.updateConversation(trx, id, { status: assignee ? 'assigned' : 'open', assigned_user_id: assignee }, now);
      if (assignee) await repo.markAssigned(trx, assignee, now);
      // An agent taking a bot's conversation takes it over from the bot.
      if (assignee && conversation.bot_state === 'active') {
        await this.#handOff(trx, emit, conversation, { by: 'member', assignee, departmentId: conversation.department_id }, now);
      }
      await emit(
        'conversation.assigned',
        { conversation_id: id, assigned_user_id: assignee, previous_assigned_user_id: conversation.assigned_user_id },
        { conversationId: id, internal: true, ...(assignee ? { recipients: [assignee] } : {}) },
      );
      return this.#load(trx, principal, id);
    });
  }

  async transfer(principal: Principal, id: string, input: S['TransferRequest']): Promise<S['TransferResult']> {
    // The request's own shape comes before anything about the conversation (docs/decisions.md: 400 before 404).
    if ((input.user_id === undefined) === (input.department_id === undefined)) {
      throw new AppError('ERR_TRANSFER_TARGET', 'Name exactly one target: user_id or department_id');
    }
    const user = requireUser(principal);
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      if (conversation.status === 'closed') throw conversationClosed();
      let assignee: string | null;
      let routed = false;
      let departmentId = conversation.department_id;
      if (input.user_id !== undefined) {
        assignee = normaliseUserRef(input.user_id);
        await assertCanHandle(trx, principal.tenantId, assignee);
      } else {
        departmentId = input.department_id!;
        ({ assignee, routed } = await this.#route(trx, principal.tenantId, departmentId, { required: true }));
      }
      const now = new Date();
      await repo.updateConversation(trx, id, { status: assignee ? 'assigned' : 'open', assigned_user_id: assignee, department_id: departmentId }, now);
      if (assignee) await repo.markAssigned(trx, assignee, now);
      if (input.note) {
        await appendMessage(trx, emit, conversation, { sender_type: 'user', sender_id: user.userId, type: 'note', content: input.note, internal: true }, now);
      }
      await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content: VISITOR_NOTICES.transferred }, now);
      await emit(
        'conversation.transferred',
        { conversation_id: id, assigned_user_id: assignee, department_id: departmentId },
        { conversationId: id, internal: true, ...(assignee ? { recipients: [assignee] } : {}) },
      );
      if (conversation.bot_state === 'active') await this.#handOff(trx, emit, conversation, { by: 'member', assignee, departmentId }, now);
      await this.#routed(trx, emit, id, { routed, assignee, previous: conversation.assigned_user_id, departmentId, reason: 'transferred' });
      return { message: 'Conversation transferred', conversation: await this.#load(trx, principal, id) };
    });
  }

  /**
   * The bot that holds the conversation, or a member taking over, hands it to the team: routed like a
   * transfer (the department named, else the bot's handoff department, else the whole team; a member
   * without a department takes it), bot_state handed_off, conversation.handed_off.
   */
  async handoff(principal: Principal, id: string, input: S['HandoffRequest']): Promise<S['TransferResult']> {
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      checkBotAccess(conversation, principal, true);
      if (conversation.status === 'closed') throw conversationClosed();
      if (conversation.bot_state !== 'active') throw conflict('No bot holds this conversation: there is nothing to hand off');
      const bot = conversation.bot_id ? await botInTransaction(trx, conversation.bot_id) : undefined;
      const departmentId = input.department_id ?? bot?.handoff_department_id ?? conversation.department_id;
      let assignee: string | null;
      let routed = false;
      if (input.department_id !== undefined) ({ assignee, routed } = await this.#route(trx, principal.tenantId, input.department_id, { required: true }));
      else if (principal.kind === 'user') assignee = principal.userId;
      else ({ assignee, routed } = await this.#route(trx, principal.tenantId, departmentId, { required: false }));
      const now = new Date();
      await repo.updateConversation(trx, id, { status: assignee ? 'assigned' : 'open', assigned_user_id: assignee, department_id: departmentId }, now);
      if (assignee) await repo.markAssigned(trx, assignee, now);
      if (input.note) {
        const author = principal.kind === 'user' ? { sender_type: 'user' as const, sender_id: principal.userId } : { sender_type: 'bot' as const, sender_id: callerIdOf(principal) };
        await appendMessage(trx, emit, conversation, { ...author, type: 'note', content: input.note, internal: true }, now);
      }
      await this.#handOff(trx, emit, conversation, { by: principal.kind === 'user' ? 'member' : 'bot', assignee, departmentId }, now);
      await this.#routed(trx, emit, id, { routed, assignee, previous: conversation.assigned_user_id, departmentId, reason: 'handed_off' });
      return { message: 'Conversation handed off', conversation: await this.#load(trx, principal, id) };
    });
  }

  // The bot lets go: bot_state handed_off, the visitor told without names, conversation.handed_off to the team.
  async #handOff(
    trx: Tx,
    emit: Emit,
    conversation: { id: string; tenant_id: string; bot_id: string | null },
    to: { by: 'bot' | 'member'; assignee: string | null; departmentId: string | null },
    now: Date,
  ) {
    await repo.updateConversation(trx, conversation.id, { bot_state: 'handed_off' }, now);
    await factsOnHandoff(trx, conversation, to.assignee, now);
    await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content: VISITOR_NOTICES.handedOff }, now);
    await emit(
      'conversation.handed_off',
      { conversation_id: conversation.id, bot_id: conversation.bot_id, by: to.by, assigned_user_id: to.assignee, department_id: to.departmentId },
      { conversationId: conversation.id, internal: true, ...(to.assignee ? { recipients: [to.assignee] } : {}) },
    );
  }

  /**
   * Who takes a conversation handed to a department (or the team, null) by a transfer or a handoff. Where
   * routing is on (the department's mode, or the tenant's), routing picks (online, under capacity; see
   * ConversationRouting), and nobody available leaves it in the queue (null). In `manual`, the pick as
   * before: online first, then away, then offline. `required` (a department named in the request): it must
   * be this tenant's (ERR_INVALID_DEPARTMENT) and have an active full-seat member (ERR_DEPARTMENT_NO_AGENTS),
   * as before; otherwise (a bot's handoff to its own department, which never fails for want of an agent)
   * the conversation waits in the queue.
   */
  async #route(trx: Tx, tenantId: string, departmentId: string | null, options: { required: boolean }): Promise<{ assignee: string | null; routed: boolean }> {
    if (departmentId && !(await repo.departmentExists(trx, departmentId))) {
      if (options.required) throw invalidDepartment();
      return { assignee: null, routed: false };
    }
    const candidates = departmentId ? await repo.departmentCandidates(trx, departmentId) : await repo.teamCandidates(trx, tenantId);
    if (candidates.length === 0 && options.required) throw noAgents();
    const routing = await this.#routing.route(trx, tenantId, departmentId);
    if (routing.mode !== 'manual') return { assignee: routing.assignee, routed: true };
    return { assignee: await this.#rank(tenantId, candidates), routed: false };
  }

  // Routing's own events for a transfer or handoff it routed: the assignment it made, or the wait in the queue.
  async #routed(
    trx: Tx,
    emit: Emit,
    id: string,
    r: { routed: boolean; assignee: string | null; previous: string | null; departmentId: string | null; reason: 'transferred' | 'handed_off' },
  ) {
    if (!r.routed) return;
    if (r.assignee) await this.#routing.assigned(emit, id, r.assignee, r.previous);
    else await this.#routing.queued(trx, emit, id, r.departmentId, r.reason);
  }

  async close(principal: Principal, id: string): Promise<S['ConversationResult']> {
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      if (conversation.status === 'closed') throw conversationClosed();
      await this.#close(trx, emit, conversation, new Date());
      return { conversation: await this.#load(trx, principal, id) };
    });
  }

  async reopen(principal: Principal, id: string): Promise<S['ConversationResult']> {
    requireUser(principal);
    return this.#tx(principal, async (trx, emit) => {
      const conversation = await this.#lock(trx, id);
      if (conversation.status !== 'closed') {
        throw new AppError('ERR_CONVERSATION_NOT_CLOSED', 'Only a closed conversation can be reopened');
      }
      await this.#reopen(trx, emit, conversation, new Date());
      return { conversation: await this.#load(trx, principal, id) };
    });
  }

  // Closing: status, a notice the visitor sees, a pending survey with its prompt, conversation.closed.
  // Messages stay. Workflows run from the event, outside this transaction.
  // A workflow's skip_survey closes without the survey.
  async #close(trx: Tx, emit: Emit, conversation: { id: string; tenant_id: string }, now: Date, survey = true) {
    await repo.updateConversation(trx, conversation.id, { status: 'closed', closed_at: now }, now);
    await endSnooze(trx, emit, conversation.id, 'closed', now);
    await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content: VISITOR_NOTICES.closed }, now);
    let surveyId: string | null = null;
    if (survey) {
      surveyId = newId('survey');
      await repo.insertSurvey(trx, { id: surveyId, tenant_id: conversation.tenant_id, conversation_id: conversation.id, created_at: now });
      await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'survey', content: VISITOR_NOTICES.survey }, now);
    }
    await emit(
      'conversation.closed',
      { conversation_id: conversation.id, survey_id: surveyId, closed_at: now.toISOString() },
      { conversationId: conversation.id },
    );
    // Last: its rollups' rows are the tenant's for the day, shared by every close, and stay locked to the commit.
    await factsOnClose(trx, conversation, now, survey);
  }

  // ---- Workflow actions (src/workflows/) ------------------------------------------------------------
  // In a run's event-writing transaction (its events carry the run's depth), as the system: no member
  // acts, so notices name nobody and nothing counts as anyone's read. Each answers false when there was
  // nothing to do; a closed conversation is ERR_CONVERSATION_CLOSED, as for members.

  /** The conversation as a workflow's conditions read it, or undefined when it is not in this tenant. */
  async forWorkflow(trx: Tx, id: string): Promise<ConversationDto | undefined> {
    const row = await repo.findConversation(trx, id, SYSTEM_READER);
    return row ? toConversationDto(row) : undefined;
  }

  async closeForWorkflow(trx: Tx, emit: Emit, id: string, options: { survey: boolean }): Promise<boolean> {
    const conversation = await this.#lock(trx, id);
    if (conversation.status === 'closed') return false;
    await this.#close(trx, emit, conversation, new Date(), options.survey);
    return true;
  }

  async setPriorityForWorkflow(trx: Tx, emit: Emit, id: string, priority: S['Priority']): Promise<boolean> {
    const conversation = await this.#lock(trx, id);
    if (conversation.status === 'closed') throw conversationClosed();
    if (conversation.priority === priority) return false;
    await repo.updateConversation(trx, id, { priority }, new Date());
    const dto = (await this.forWorkflow(trx, id))!;
    await emit('conversation.updated', { conversation_id: id, changed: ['priority'], conversation: dto }, { conversationId: id });
    return true;
  }

  /**
   * Transfers to the department as a member's transfer does (routed where routing is on); answers the
   * assignee, or `the queue` when routing found nobody available and the conversation waits there.
   */
  async transferForWorkflow(trx: Tx, emit: Emit, id: string, departmentId: string): Promise<string> {
    const conversation = await this.#lock(trx, id);
    if (conversation.status === 'closed') throw conversationClosed();
    const { assignee, routed } = await this.#route(trx, conversation.tenant_id, departmentId, { required: true });
    const now = new Date();
    await repo.updateConversation(trx, id, { status: assignee ? 'assigned' : 'open', assigned_user_id: assignee, department_id: departmentId }, now);
    if (assignee) await repo.markAssigned(trx, assignee, now);
    await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content: VISITOR_NOTICES.transferred }, now);
    await emit(
      'conversation.transferred',
      { conversation_id: id, assigned_user_id: assignee, department_id: departmentId },
      { conversationId: id, internal: true, ...(assignee ? { recipients: [assignee] } : {}) },
    );
    await this.#routed(trx, emit, id, { routed, assignee, previous: conversation.assigned_user_id, departmentId, reason: 'transferred' });
    return assignee ?? 'the queue';
  }

  /** A system message the visitor sees. */
  async sendMessageForWorkflow(trx: Tx, emit: Emit, id: string, content: string): Promise<void> {
    const conversation = await this.#lock(trx, id);
    if (conversation.status === 'closed') throw conversationClosed();
    await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content }, new Date());
  }

  // Reopening: open and unassigned; department and bot state stay as they are.
  async #reopen(trx: Tx, emit: Emit, conversation: { id: string; tenant_id: string }, now: Date) {
    await repo.updateConversation(trx, conversation.id, { status: 'open', assigned_user_id: null, closed_at: null }, now);
    await appendMessage(trx, emit, conversation, { sender_type: 'system', sender_id: null, type: 'system', content: VISITOR_NOTICES.reopened }, now);
    await emit('conversation.reopened', { conversation_id: conversation.id }, { conversationId: conversation.id });
    // Last, as a close's (its rollups' rows are shared by the tenant's reopens of the day).
    await factsOnReopen(trx, conversation, now);
  }

  // Online first, then away, then offline; among equals the fewest open conversations, then the one who
  // has waited longest since their last assignment (never assigned counts as longest).
  async #rank(tenantId: string, candidates: { user_id: string; last_assigned_at: Date | null; open_conversations: number | null }[]): Promise<string | null> {
    if (candidates.length === 0) return null;
    const presence = await this.#presence.presenceOf(tenantId, candidates.map((c) => c.user_id));
    const ranked = candidates
      .map((c) => ({
        userId: c.user_id,
        presence: PRESENCE_RANK[presence.get(c.user_id) ?? 'offline'],
        open: Number(c.open_conversations ?? 0),
        lastAssigned: c.last_assigned_at?.getTime() ?? Number.NEGATIVE_INFINITY,
      }))
      .sort((a, b) => a.presence - b.presence || a.open - b.open || a.lastAssigned - b.lastAssigned || a.userId.localeCompare(b.userId));
    return ranked[0]!.userId;
  }
}

/** Whose read marks the system's reads use: nobody's (no member reads as the system). */
const SYSTEM_READER = 'system';

/** For other features' rules (a workflow names a department): whether it is this tenant's. */
export const departmentOf = (trx: Tx, id: string): Promise<boolean> => repo.departmentExists(trx, id);

const invalidDepartment = () => new AppError('ERR_INVALID_DEPARTMENT', 'The department does not belong to this account');
const noAgents = () => new AppError('ERR_DEPARTMENT_NO_AGENTS', 'Nobody in the department can take over: it has no active full-seat member');

async function assertCanHandle(trx: Tx, tenantId: string, userId: string): Promise<void> {
  const member = await activeMembership(trx, tenantId, userId);
  if (!member) throw userNotInTenant();
  if (member.seat !== 'full') throw assigneeLiteSeat();
}
