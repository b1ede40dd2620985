import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { TokenService } from '../auth/tokens.ts';
import type { PlanLimits } from '../billing/billing.service.ts';
import { VISITOR_TOKEN_TTL_SECONDS } from '../auth/tokens.ts';
import { VisitorConversationService } from '../conversations/visitor-conversation.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { StoredHours } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import type { VisitorPrincipal } from '../shared/principal.ts';
import { AppError, forbidden, notFound } from '../shared/errors.ts';
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

/** Whether someone can answer now (routing's availability: online, full seat, under capacity): the widget shows its away message if not. */
export interface TeamAvailability {
  available(tenantId: string): Promise<boolean>;
}

export class WidgetPublicService {
  readonly #database: Database;
  readonly #tokens: TokenService;
  readonly #conversations: VisitorConversationService;
  readonly #team: TeamAvailability;

  constructor(deps: { database: Database; bus: EventBus; tokens: TokenService; limits: PlanLimits; team: TeamAvailability }) {
    this.#database = deps.database;
    this.#tokens = deps.tokens;
    this.#conversations = new VisitorConversationService(deps);
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
    // The session and the hours the bubble shows, in one transaction: each is a turn at the embedded
    // database's one connection, which a busy instance queues for.
    const { visitorId, contactId, hours } = await this.#database.withTenant(widget.tenant_id, async (trx) => {
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
      return { visitorId: id, contactId, hours: (await applicableHours(trx, widget.tenant_id, null)).hours };
    });
    const token = this.#tokens.signVisitorToken({ visitorId, tenantId: widget.tenant_id, widgetId: widget.id, contactId: contactId ?? undefined });
    return {
      visitor_id: visitorId,
      visitor_token: token,
      expires_at: new Date(now.getTime() + VISITOR_TOKEN_TTL_SECONDS * 1000).toISOString(),
      widget: { id: widget.id, settings: widget.settings as S['WidgetSettings'], ...(await this.#availability(widget.tenant_id, now, hours)) },
    };
  }

  /** Inside business hours and someone available: the bubble offers a chat; outside, it says when hours begin. */
  async #availability(tenantId: string, now: Date, hours: StoredHours | null): Promise<{ team_available: boolean; open: boolean; next_open_at: string | null }> {
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

  listConversations(visitor: VisitorPrincipal): Promise<S['WidgetConversationList']> {
    return this.#conversations.listConversations(visitor);
  }

  startConversation(visitor: VisitorPrincipal, content: string, attachmentIds: string[] = []): Promise<S['WidgetConversation']> {
    return this.#conversations.startConversation(visitor, content, attachmentIds, (trx) => this.#botOf(trx, visitor.widgetId));
  }

  listMessages(visitor: VisitorPrincipal, conversationId: string, page: { limit: number; cursor?: string }): Promise<S['MessageList']> {
    return this.#conversations.listMessages(visitor, conversationId, page);
  }

  sendMessage(visitor: VisitorPrincipal, conversationId: string, content: string, attachmentIds: string[] = []): Promise<S['Message']> {
    return this.#conversations.sendMessage(visitor, conversationId, content, attachmentIds);
  }

  answerSurvey(visitor: VisitorPrincipal, conversationId: string, input: S['SurveyAnswerCreate']): Promise<S['SurveyAnswer']> {
    return this.#conversations.answerSurvey(visitor, conversationId, input);
  }

  async #botOf(trx: Tx, widgetId: string) {
    const widget = await repo.findWidget(trx, widgetId);
    const botId = (widget?.settings as { bot_id?: unknown } | undefined)?.bot_id;
    if (typeof botId !== 'string') return undefined;
    const bot = await botInTransaction(trx, botId);
    return bot?.enabled ? bot : undefined;
  }
}
