import type { components } from '../../generated/api.ts';
import type { PlanLimits } from '../billing/billing.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Message } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { inTenantTransaction } from '../events/outbox.ts';
import { messageForVisitor } from '../events/visitor-view.ts';
import { attachFiles, attachmentsOf } from '../files/file.service.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { conflict, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { keysetPageOf } from '../shared/pagination.ts';
import type { VisitorPrincipal } from '../shared/principal.ts';
import * as repo from './conversation.repository.ts';
import { toConversationDto } from './conversation.service.ts';
import * as messageRepo from './message.repository.ts';
import { appendMessage, conversationClosed, toMessageDto } from './message.service.ts';

type S = components['schemas'];

// Internal notes are filtered out before; the view hides who answered.
const forVisitor = (m: Message, files: ReadonlyMap<string, S['Attachment']>): S['Message'] => messageForVisitor(toMessageDto(m, files));

/** The visitor's conversations the widget lists, newest activity first. */
const WIDGET_CONVERSATIONS_SHOWN = 100;

/**
 * Conversations as their visitor sees them through the widget: their own only, no internal notes, the
 * survey to answer. The widget feature authenticates the visitor and calls these.
 */
export class VisitorConversationService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #limits: PlanLimits;

  constructor(deps: { database: Database; bus: EventBus; limits: PlanLimits }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#limits = deps.limits;
  }

  async listConversations(visitor: VisitorPrincipal): Promise<S['WidgetConversationList']> {
    const rows = await this.#database.withTenant(visitor.tenantId, (trx) =>
      repo.listVisitorConversations(trx, visitor.visitorId, WIDGET_CONVERSATIONS_SHOWN),
    );
    return { data: rows.map(toWidgetConversation) };
  }

  async startConversation(
    visitor: VisitorPrincipal,
    content: string,
    attachmentIds: string[],
    /** The widget's bot, while it is enabled, takes the conversation first: no agent is picked. */
    botOf: (trx: Tx) => Promise<{ id: string } | undefined>,
  ): Promise<S['WidgetConversation']> {
    return inTenantTransaction(this.#database, this.#bus, visitor.tenantId, async (trx, emit) => {
      // Past the plan's conversations the start is refused whole (402, nothing stored) and the widget keeps
      // the visitor's text and says the team cannot take new chats now (docs/billing.md).
      await this.#limits.assertConversationAvailable(trx, visitor.tenantId);
      const now = new Date();
      const id = newId('conversation');
      const bot = await botOf(trx);
      await repo.insertConversation(trx, {
        id,
        tenant_id: visitor.tenantId,
        status: 'open',
        priority: 'normal',
        subject: null,
        visitor_id: visitor.visitorId,
        contact_id: visitor.contactId,
        department_id: null,
        assigned_user_id: null,
        widget_id: visitor.widgetId,
        ...(bot ? { bot_id: bot.id, bot_state: 'active' as const } : {}),
        now,
      });
      const created = await repo.findConversation(trx, id, visitor.visitorId);
      await emit('conversation.created', { conversation_id: id, conversation: toConversationDto(created!) }, { conversationId: id });
      const attachments = await attachFiles(trx, id, attachmentIds, { kind: 'visitor', visitorId: visitor.visitorId }, now);
      await appendMessage(trx, emit, { id, tenant_id: visitor.tenantId }, { sender_type: 'visitor', sender_id: visitor.visitorId, type: 'text', content, attachments }, now);
      return this.#own(trx, visitor, id);
    });
  }

  async listMessages(visitor: VisitorPrincipal, conversationId: string, page: { limit: number; cursor?: string }): Promise<S['MessageList']> {
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    return this.#database.withTenant(visitor.tenantId, async (trx) => {
      await this.#own(trx, visitor, conversationId);
      const { rows, hasMore, total } = await messageRepo.listMessages(
        trx,
        conversationId,
        { limit: page.limit, ...(before ? { before } : {}) },
        { publicOnly: true },
      );
      const files = await attachmentsOf(trx, rows);
      return {
        data: rows.map((row) => forVisitor(row, files)),
        pagination: keysetPageOf(rows, { limit: page.limit, hasMore, total }, (last) => encodeCursor(last.created_at, last.id)),
      };
    });
  }

  async sendMessage(visitor: VisitorPrincipal, conversationId: string, content: string, attachmentIds: string[] = []): Promise<S['Message']> {
    return inTenantTransaction(this.#database, this.#bus, visitor.tenantId, async (trx, emit) => {
      await this.#own(trx, visitor, conversationId);
      const conversation = await repo.lockConversation(trx, conversationId);
      if (conversation!.status === 'closed') throw conversationClosed();
      const now = new Date();
      const attachments = await attachFiles(trx, conversationId, attachmentIds, { kind: 'visitor', visitorId: visitor.visitorId }, now);
      return appendMessage(trx, emit, conversation!, { sender_type: 'visitor', sender_id: visitor.visitorId, type: 'text', content, attachments }, now);
    });
  }

  async answerSurvey(visitor: VisitorPrincipal, conversationId: string, input: S['SurveyAnswerCreate']): Promise<S['SurveyAnswer']> {
    return inTenantTransaction(this.#database, this.#bus, visitor.tenantId, async (trx, emit) => {
      await this.#own(trx, visitor, conversationId);
      const survey = await repo.lockLatestSurvey(trx, conversationId);
      if (!survey) throw conflict('No satisfaction survey is waiting: the conversation has not been closed');
      if (survey.status !== 'pending') throw conflict('The satisfaction survey was already answered');
      const answeredAt = new Date();
      const comment = input.comment ?? null;
      await repo.recordSurveyAnswer(trx, survey.id, { rating: input.rating, comment, answeredAt });
      await emit(
        'csat.submitted',
        { conversation_id: conversationId, survey_id: survey.id, rating: input.rating, comment },
        { conversationId, internal: true },
      );
      return { survey_id: survey.id, conversation_id: conversationId, rating: input.rating, comment, answered_at: answeredAt.toISOString() };
    });
  }

  // A conversation of this visitor, or "not found" (whoever else it belongs to).
  async #own(trx: Tx, visitor: VisitorPrincipal, conversationId: string): Promise<S['WidgetConversation']> {
    const row = await repo.findVisitorConversation(trx, conversationId, visitor.visitorId);
    if (!row) throw notFound('Conversation');
    return toWidgetConversation(row);
  }
}

function toWidgetConversation(row: repo.VisitorConversationRow): S['WidgetConversation'] {
  return {
    id: row.id,
    status: row.status === 'closed' ? 'closed' : 'open',
    last_message: row.last_message,
    last_message_at: row.last_message_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    survey: row.survey ? { ...row.survey, answered_at: row.survey.answered_at ? new Date(row.survey.answered_at).toISOString() : null } : null,
  };
}
