import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { TokenService } from '../auth/tokens.ts';
import type { PlanLimits } from '../billing/billing.service.ts';
import { VISITOR_TOKEN_TTL_SECONDS } from '../auth/tokens.ts';
import * as conversationRepo from '../conversations/conversation.repository.ts';
import { toConversationDto } from '../conversations/conversation.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Message } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { inTenantTransaction } from '../events/outbox.ts';
import { messageForVisitor } from '../events/visitor-view.ts';
import type { VisitorPrincipal } from '../shared/principal.ts';
import { attachFiles, attachmentsOf } from '../files/file.service.ts';
import * as messageRepo from '../messages/message.repository.ts';
import { appendMessage, conversationClosed, toMessageDto } from '../messages/message.service.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { AppError, conflict, forbidden, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { keysetPageOf } from '../shared/pagination.ts';
import { originAllowed } from './domain.ts';
import { recordVisitorPage, recordVisitorSession } from '../visitors/visitor.service.ts';
import { contactForEmail } from '../contacts/contact.service.ts';
import * as repo from './widget.repository.ts';
import { botInTransaction } from '../bots/bot.service.ts';
import { applicableHours, statusOf } from '../hours/hours.service.ts';

type S = components['schemas'];

const originRefused = () => forbidden('This page is not on one of the widget\'s domains');
const identityRequired = () => forbidden('This widget requires a verified identity: send user.email and user.user_hash');

/** The HMAC a site's server computes for a signed-in user: hex HMAC-SHA256 of the e-mail under the widget secret. */
export const userHash = (secret: string, email: string) => createHmac('sha256', secret).update(email.trim().toLowerCase()).digest('hex');

function hashMatches(secret: string, email: string, given: string): boolean {
  const expected = Buffer.from(userHash(secret, email), 'hex');
  const actual = Buffer.from(given, 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

// Internal notes are filtered out before; the view hides who answered.
const forVisitor = (m: Message, files: ReadonlyMap<string, S['Attachment']>): S['Message'] => messageForVisitor(toMessageDto(m, files));
/** Whether someone can answer now (routing's availability: online, full seat, under capacity): the widget shows its away message if not. */
export interface TeamAvailability {
  available(tenantId: string): Promise<boolean>;
}

/** The visitor's conversations the widget lists, newest activity first. */
const WIDGET_CONVERSATIONS_SHOWN = 100;

export class WidgetPublicService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #tokens: TokenService;
  readonly #limits: PlanLimits;
  readonly #team: TeamAvailability;

  constructor(deps: { database: Database; bus: EventBus; tokens: TokenService; limits: PlanLimits; team: TeamAvailability }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#tokens = deps.tokens;
    this.#limits = deps.limits;
    this.#team = deps.team;
  }

  /** For the access middleware: a visitor token, its widget's domains against the Origin, and its identity rule. */
  async authenticate(token: string, origin: string | undefined): Promise<VisitorPrincipal> {
    const claims = this.#tokens.verifyVisitorToken(token);
    if (!claims.widgetId) throw new AppError('ERR_UNAUTHENTICATED', 'The visitor token is not valid');
    const found = await this.#database.asSystem((trx) => repo.findWidgetWithDomains(trx, claims.widgetId!));
    if (!found || found.widget.tenant_id !== claims.tenantId) throw new AppError('ERR_UNAUTHENTICATED', 'The widget of this session no longer exists');
    if (!originAllowed(origin, found.domains)) throw originRefused();
    if (found.widget.identity_required && !claims.contactId) throw identityRequired();
    return { kind: 'visitor', visitorId: claims.visitorId, tenantId: claims.tenantId, widgetId: claims.widgetId, contactId: claims.contactId ?? null };
  }

  /** For CORS preflights, which name no widget: whether some widget allows this host. */
  async anyWidgetAllowsHost(host: string): Promise<boolean> {
    return this.#database.asSystem((trx) => repo.anyWidgetAllowsHost(trx, host));
  }

  async startSession(input: S['WidgetSessionCreate'], origin: string | undefined, previousToken: string | undefined): Promise<S['WidgetSession']> {
    const found = await this.#database.asSystem((trx) => repo.findWidgetWithDomains(trx, input.widget_id));
    if (!found) throw notFound('Widget');
    const { widget, domains } = found;
    if (!originAllowed(origin, domains)) throw originRefused();
    if (input.user && !hashMatches(widget.identity_secret, input.user.email, input.user.user_hash)) {
      throw forbidden('The user_hash does not match the e-mail for this widget');
    }
    if (widget.identity_required && !input.user) throw identityRequired();
    // The same visitor again only with their own earlier token for this tenant.
    let returning: string | undefined;
    if (previousToken) {
      try {
        const claims = this.#tokens.verifyVisitorToken(previousToken);
        if (claims.tenantId === widget.tenant_id && (!input.visitor_id || input.visitor_id === claims.visitorId)) returning = claims.visitorId;
      } catch {
        // An expired or foreign token starts a new visitor.
      }
    }
    const now = new Date();
    const { visitorId, contactId } = await this.#database.withTenant(widget.tenant_id, async (trx) => {
      let contactId: string | null = null;
      if (input.user) contactId = await contactForEmail(trx, widget.tenant_id, input.user.email, input.user.name, now);
      const id = await recordVisitorSession(trx, {
        returningId: returning,
        tenantId: widget.tenant_id,
        widgetId: widget.id,
        contactId,
        user: input.user,
        page: { url: input.page_url, title: input.page_title, referrer: input.referrer },
        now,
      });
      return { visitorId: id, contactId };
    });
    const token = this.#tokens.signVisitorToken({ visitorId, tenantId: widget.tenant_id, widgetId: widget.id, contactId: contactId ?? undefined });
    return {
      visitor_id: visitorId,
      visitor_token: token,
      expires_at: new Date(now.getTime() + VISITOR_TOKEN_TTL_SECONDS * 1000).toISOString(),
      widget: { id: widget.id, settings: widget.settings as S['WidgetSettings'], ...(await this.#availability(widget.tenant_id, now)) },
    };
  }

  /** Inside business hours and someone available: the bubble offers a chat; outside, it says when hours begin. */
  async #availability(tenantId: string, now: Date): Promise<{ team_available: boolean; open: boolean; next_open_at: string | null }> {
    const { hours } = await this.#database.withTenant(tenantId, (trx) => applicableHours(trx, tenantId, null));
    const { open, next_change_at } = statusOf(hours, now);
    return { team_available: open && (await this.#team.available(tenantId)), open, next_open_at: open ? null : next_change_at };
  }

  async recordPageView(visitor: VisitorPrincipal, input: S['PageViewCreate']): Promise<{ recorded: true }> {
    await this.#database.withTenant(visitor.tenantId, async (trx) => {
      const now = new Date();
      await recordVisitorPage(trx, visitor.tenantId, visitor.visitorId, input, now);
    });
    return { recorded: true };
  }

  async listConversations(visitor: VisitorPrincipal): Promise<S['WidgetConversationList']> {
    const rows = await this.#database.withTenant(visitor.tenantId, (trx) =>
      conversationRepo.listVisitorConversations(trx, visitor.visitorId, WIDGET_CONVERSATIONS_SHOWN),
    );
    return { data: rows.map(toWidgetConversation) };
  }

  async startConversation(visitor: VisitorPrincipal, content: string, attachmentIds: string[] = []): Promise<S['WidgetConversation']> {
    return inTenantTransaction(this.#database, this.#bus, visitor.tenantId, async (trx, emit) => {
      // Past the plan's conversations the start is refused whole (402, nothing stored) and the widget keeps
      // the visitor's text and says the team cannot take new chats now (docs/billing.md).
      await this.#limits.assertConversationAvailable(trx, visitor.tenantId);
      const now = new Date();
      const id = newId('conversation');
      // The widget's bot, while it is enabled, takes the conversation first: no agent is picked.
      const bot = await this.#botOf(trx, visitor.widgetId);
      await conversationRepo.insertConversation(trx, {
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
      const created = await conversationRepo.findConversation(trx, id, visitor.visitorId);
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
      const conversation = await conversationRepo.lockConversation(trx, conversationId);
      if (conversation!.status === 'closed') throw conversationClosed();
      const now = new Date();
      const attachments = await attachFiles(trx, conversationId, attachmentIds, { kind: 'visitor', visitorId: visitor.visitorId }, now);
      return appendMessage(trx, emit, conversation!, { sender_type: 'visitor', sender_id: visitor.visitorId, type: 'text', content, attachments }, now);
    });
  }

  async answerSurvey(visitor: VisitorPrincipal, conversationId: string, input: S['SurveyAnswerCreate']): Promise<S['SurveyAnswer']> {
    return inTenantTransaction(this.#database, this.#bus, visitor.tenantId, async (trx, emit) => {
      await this.#own(trx, visitor, conversationId);
      const survey = await conversationRepo.lockLatestSurvey(trx, conversationId);
      if (!survey) throw conflict('No satisfaction survey is waiting: the conversation has not been closed');
      if (survey.status !== 'pending') throw conflict('The satisfaction survey was already answered');
      const answeredAt = new Date();
      const comment = input.comment ?? null;
      await conversationRepo.recordSurveyAnswer(trx, survey.id, { rating: input.rating, comment, answeredAt });
      await emit(
        'csat.submitted',
        { conversation_id: conversationId, survey_id: survey.id, rating: input.rating, comment },
        { conversationId, internal: true },
      );
      return { survey_id: survey.id, conversation_id: conversationId, rating: input.rating, comment, answered_at: answeredAt.toISOString() };
    });
  }

  async #botOf(trx: Tx, widgetId: string) {
    const widget = await repo.findWidget(trx, widgetId);
    const botId = (widget?.settings as { bot_id?: unknown } | undefined)?.bot_id;
    if (typeof botId !== 'string') return undefined;
    const bot = await botInTransaction(trx, botId);
    return bot?.enabled ? bot : undefined;
  }

  // A conversation of this visitor, or "not found" (whoever else it belongs to).
  async #own(trx: Tx, visitor: VisitorPrincipal, conversationId: string): Promise<S['WidgetConversation']> {
    const row = await conversationRepo.findVisitorConversation(trx, conversationId, visitor.visitorId);
    if (!row) throw notFound('Conversation');
    return toWidgetConversation(row);
  }
}

function toWidgetConversation(row: conversationRepo.VisitorConversationRow): S['WidgetConversation'] {
  return {
    id: row.id,
    status: row.status === 'closed' ? 'closed' : 'open',
    last_message: row.last_message,
    last_message_at: row.last_message_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    survey: row.survey ? { ...row.survey, answered_at: row.survey.answered_at ? new Date(row.survey.answered_at).toISOString() : null } : null,
  };
}
