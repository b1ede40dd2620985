import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import type { RequestHandler } from 'express';
import type { VisitorPrincipal } from '../shared/principal.ts';
import type { Handlers } from '../http/contract.ts';
import { AppError } from '../shared/errors.ts';
import type { WidgetPublicService } from './widget-public.service.ts';

type PublicOps =
  | 'startWidgetSession'
  | 'recordPageView'
  | 'listWidgetConversations'
  | 'startWidgetConversation'
  | 'listWidgetMessages'
  | 'sendWidgetMessage'
  | 'answerSurvey';

const visitorOf = (principal: unknown) => principal as VisitorPrincipal;

export const widgetPublicHandlers = (widget: WidgetPublicService): Pick<Handlers, PublicOps> => ({
  startWidgetSession: async ({ body, req }) => {
    const origin = req.get('origin');
    const authorization = req.get('authorization');
    const previous = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined;
    const session = await widget.startSession(body, origin, previous);
    // Only now is the widget known, and the origin one of its domains.
    return { status: 201, body: session, headers: { 'Access-Control-Allow-Origin': origin!, Vary: 'Origin' } };
  },
  recordPageView: async ({ principal, body }) => ({ status: 201, body: await widget.recordPageView(visitorOf(principal), body) }),
  listWidgetConversations: async ({ principal }) => ({ status: 200, body: await widget.listConversations(visitorOf(principal)) }),
  startWidgetConversation: async ({ principal, body }) => ({ status: 201, body: await widget.startConversation(visitorOf(principal), body.content, body.attachments) }),
  listWidgetMessages: async ({ principal, params, query }) => ({
    status: 200,
    body: await widget.listMessages(visitorOf(principal), params.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) }),
  }),
  sendWidgetMessage: async ({ principal, params, body }) => ({ status: 201, body: await widget.sendMessage(visitorOf(principal), params.id, body.content, body.attachments) }),
  answerSurvey: async ({ principal, params, body }) => ({ status: 201, body: await widget.answerSurvey(visitorOf(principal), params.id, body) }),
});

/**
 * A page on the service's own origin (the first-run guide's test page) sends its bubble's GETs without an
 * Origin header, as browsers do for same-origin requests that change nothing; the widget API judges
 * every request by its Origin. Such a request says so in Sec-Fetch-Site, which a page cannot set: its
 * own origin then stands for the missing header, and the widget's domains judge it as any other.
 */
export function sameOriginWidgetRequests(): RequestHandler {
  return (req, _res, next) => {
    if (req.headers.origin === undefined && req.get('sec-fetch-site') === 'same-origin') req.headers.origin = `${req.protocol}://${req.get('host')}`;
    next();
  };
}

/**
 * CORS preflights of the public widget API. A preflight names no widget, so it is answered for an origin
 * that some widget allows; the request itself then answers only when its own widget allows the origin.
 */
export function widgetPreflight(widget: WidgetPublicService): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    const origin = req.get('origin');
    let host: string | undefined;
    try {
      host = origin ? new URL(origin).hostname.toLowerCase() : undefined;
    } catch {
      host = undefined;
    }
    if (!host) return next(new AppError('ERR_FORBIDDEN', 'This origin is not on any widget\'s domains'));
    widget
      .anyWidgetAllowsHost(host)
      .then((allowed) => {
        if (!allowed) return next(new AppError('ERR_FORBIDDEN', 'This origin is not on any widget\'s domains'));
        res.setHeader('Access-Control-Allow-Origin', origin!);
        res.setHeader('Vary', 'Origin');
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST');
        res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type');
        res.setHeader('Access-Control-Max-Age', '600');
        res.status(204).end();
      }, next);
  };
}
