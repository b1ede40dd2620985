import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type Store } from 'express-rate-limit';
import { RedisStore, type SendCommandFn } from 'rate-limit-redis';
import { AppError } from '../shared/errors.ts';
import type { Principal } from './access.ts';

export interface RateLimitSettings {
  perMinute: number;
  login: number;
  forgotPassword: number;
  /** Widget sessions a minute per address. */
  widgetSessions: number;
  /** Conversations a visitor may start in an hour. */
  widgetConversations: number;
  /** Messages a visitor may send in a minute. */
  widgetMessages: number;
  /** Files a visitor may upload in an hour. */
  widgetUploads: number;
}

/** With Redis every instance counts into one budget; without it each process counts its own. */
export type RateLimitStoreFactory = (name: string) => Store | undefined;

export function redisStoreFactory(sendCommand: SendCommandFn, namespace = 'chat'): RateLimitStoreFactory {
  return (name) => new RedisStore({ sendCommand, prefix: `${namespace}:rl:${name}:` });
}

const operationIdOf = (req: Request): string | undefined =>
  (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;

const UNLIMITED_OPERATIONS = new Set(['getHealth', 'getReady']);

const clientAddress = (req: Request) => ipKeyGenerator(req.ip ?? 'unknown');
const visitorKey = (req: Request, res: { locals: Record<string, unknown> }) => {
  const principal = res.locals.principal as Principal | undefined;
  return principal?.kind === 'visitor' ? principal.visitorId : `addr:${clientAddress(req)}`;
};
// Read before the request is validated: anything but a string (an array nested 10,000 deep, which
// String() would recurse through) counts as no e-mail; the schema refuses it right after.
const emailOf = (req: Request) => {
  const email = (req.body as { email?: unknown } | undefined)?.email;
  return typeof email === 'string' ? email.toLowerCase() : '';
};

// The three budgets (docs/decisions.md, Rate limits): per credential (or address, for anonymous calls); login per e-mail
// and address; forgot-password per e-mail. They run after authentication, so they know the caller.
export function rateLimiters(settings: RateLimitSettings, storeFor: RateLimitStoreFactory): RequestHandler[] {
  const common = {
    standardHeaders: 'draft-8' as const,
    legacyHeaders: false,
    handler: ((req, res, next) => {
      const retryAfter = res.getHeader('Retry-After');
      next(new AppError('ERR_RATE_LIMITED', `Too many requests; retry after ${retryAfter ?? 'a while'} seconds`));
    }) as Parameters<typeof rateLimit>[0] extends infer O ? (O extends { handler?: infer H } ? H : never) : never,
  };
  const withStore = (name: string) => {
    const store = storeFor(name);
    return store ? { store } : {};
  };
  return [
    rateLimit({
      ...common,
      ...withStore('requests'),
      identifier: 'requests',
      windowMs: 60_000,
      limit: settings.perMinute,
      skip: (req) => UNLIMITED_OPERATIONS.has(operationIdOf(req) ?? ''),
      keyGenerator: (req, res) => {
        const principal = res.locals.principal as Principal | undefined;
        if (principal?.kind === 'user') return `user:${principal.userId}`;
        if (principal?.kind === 'api_key') return `key:${principal.keyId}`;
        if (principal?.kind === 'visitor') return `visitor:${principal.visitorId}`;
        return `addr:${clientAddress(req)}`;
      },
    }),
    rateLimit({
      ...common,
      ...withStore('login'),
      identifier: 'login',
      windowMs: 15 * 60_000,
      limit: settings.login,
      skip: (req) => operationIdOf(req) !== 'login',
      keyGenerator: (req) => `${emailOf(req)}|${clientAddress(req)}`,
    }),
    rateLimit({
      ...common,
      ...withStore('forgot'),
      identifier: 'forgot-password',
      windowMs: 60 * 60_000,
      limit: settings.forgotPassword,
      skip: (req) => operationIdOf(req) !== 'forgotPassword',
      keyGenerator: (req) => emailOf(req),
    }),
    // The public widget API faces the open internet: tighter budgets per address and per visitor.
    rateLimit({
      ...common,
      ...withStore('widget-sessions'),
      identifier: 'widget-sessions',
      windowMs: 60_000,
      limit: settings.widgetSessions,
      skip: (req) => operationIdOf(req) !== 'startWidgetSession',
      keyGenerator: (req) => clientAddress(req),
    }),
    rateLimit({
      ...common,
      ...withStore('widget-conversations'),
      identifier: 'widget-conversations',
      windowMs: 60 * 60_000,
      limit: settings.widgetConversations,
      skip: (req) => operationIdOf(req) !== 'startWidgetConversation',
      keyGenerator: (req, res) => visitorKey(req, res),
    }),
    rateLimit({
      ...common,
      ...withStore('widget-messages'),
      identifier: 'widget-messages',
      windowMs: 60_000,
      limit: settings.widgetMessages,
      skip: (req) => operationIdOf(req) !== 'sendWidgetMessage',
      keyGenerator: (req, res) => visitorKey(req, res),
    }),
    rateLimit({
      ...common,
      ...withStore('widget-uploads'),
      identifier: 'widget-uploads',
      windowMs: 60 * 60_000,
      limit: settings.widgetUploads,
      skip: (req) => operationIdOf(req) !== 'uploadWidgetFile',
      keyGenerator: (req, res) => visitorKey(req, res),
    }),
  ];
}
