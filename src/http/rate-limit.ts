import { hash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, MemoryStore, type Options, rateLimit, type RateLimitInfo, type Store } from 'express-rate-limit';
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

/**
 * Budgets in Redis while it answers, and in this process's memory while it does not: a request never
 * waits on Redis past its budget (`sendCommand` fails fast, src/redis/link.ts) nor fails because of it.
 * While Redis is away each instance grants the whole budget on its own, so N instances behind a balancer
 * let a caller make up to N times the limit; counts made meanwhile stay in memory until their window ends.
 */
export function resilientStoreFactory(sendCommand: SendCommandFn, namespace = 'chat'): RateLimitStoreFactory {
  return (name) => new FallbackStore(() => new RedisStore({ sendCommand, prefix: `${namespace}:rl:${name}:` }));
}

class FallbackStore implements Store {
  readonly #makeShared: () => Store;
  #shared: Store;
  /** The shared store failed: its script loads may be failed promises it keeps, so the next is a new one. */
  #renew = false;
  readonly #local = new MemoryStore();
  #options: Options | undefined;
  readonly localKeys = false;

  constructor(makeShared: () => Store) {
    this.#makeShared = makeShared;
    this.#shared = makeShared();
  }

  init(options: Options): void {
    this.#options = options;
    this.#local.init(options);
    this.#initShared();
  }

  #initShared(): void {
    // A failure here shows at the first increment, which then counts in memory.
    void Promise.resolve(this.#shared.init?.(this.#options!)).catch(() => (this.#renew = true));
  }

  async increment(key: string) {
    if (this.#renew) {
      this.#renew = false;
      this.#shared = this.#makeShared();
      this.#initShared();
    }
    try {
      return await this.#shared.increment(key);
    } catch {
      this.#renew = true;
      return this.#local.increment(key);
    }
  }

  async decrement(key: string) {
    await Promise.allSettled([this.#shared.decrement(key), this.#local.decrement(key)]);
  }

  async resetKey(key: string) {
    await Promise.allSettled([this.#shared.resetKey(key), this.#local.resetKey(key)]);
  }

  shutdown(): void {
    this.#local.shutdown();
  }
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

/** express-rate-limit's `pk` of a key (the first 12 hex digits of its SHA-256, in base64), kept: one hash per caller, not per request. */
const partitionKeys = new Map<string, string>();
function partitionKeyOf(key: string): string {
  let pk = partitionKeys.get(key);
  if (pk === undefined) {
    if (partitionKeys.size >= 10_000) partitionKeys.clear();
    pk = Buffer.from(hash('sha256', key, 'hex').slice(0, 12)).toString('base64');
    partitionKeys.set(key, pk);
  }
  return pk;
}

/** What a limiter counted for the request (express-rate-limit leaves it there; each limiter in turn). */
const infoOf = (req: Request) => (req as Request & { rateLimit?: RateLimitInfo }).rateLimit;

/** Seconds until the window resets, as express-rate-limit counts them. */
const resetSecondsOf = (info: RateLimitInfo, windowMs: number) =>
  info.resetTime ? Math.max(0, Math.ceil((info.resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(windowMs / 1000);

/** The IETF draft-8 headers express-rate-limit sets with `standardHeaders: 'draft-8'`, byte for byte. */
function setDraft8Headers(res: Response, name: string, windowMs: number, info: RateLimitInfo): void {
  if (res.headersSent) return;
  res.append('RateLimit', `"${name}"; r=${info.remaining}; t=${resetSecondsOf(info, windowMs)}`);
  res.append('RateLimit-Policy', `"${name}"; q=${info.limit}; w=${Math.ceil(windowMs / 1000)}; pk=:${partitionKeyOf(info.key)}:`);
}

// The three budgets (docs/decisions.md, Rate limits): per credential (or address, for anonymous calls); login per e-mail
// and address; forgot-password per e-mail. They run after authentication, so they know the caller.
export function rateLimiters(settings: RateLimitSettings, storeFor: RateLimitStoreFactory): RequestHandler {
  // Each limiter writes its headers itself: express-rate-limit hashed the key for the policy's `pk` at every
  // request and read the limiter's name through an await (18 µs of a list page's 580).
  const limiter = (name: string, identifier: string, windowMs: number, limit: number, keyGenerator: (req: Request, res: Response) => string) => {
    const store = storeFor(name);
    const counted = rateLimit({
      ...(store ? { store } : {}),
      identifier,
      windowMs,
      limit,
      keyGenerator,
      standardHeaders: false,
      legacyHeaders: false,
      handler: (req, res, next) => {
        // The limiter calls this only once it has counted the request, with what it counted.
        const info = infoOf(req)!;
        setDraft8Headers(res, identifier, windowMs, info);
        const retryAfter = resetSecondsOf(info, windowMs);
        if (!res.headersSent) res.setHeader('Retry-After', String(retryAfter));
        next(new AppError('ERR_RATE_LIMITED', `Too many requests; retry after ${retryAfter} seconds`));
      },
    }) as RequestHandler;
    return ((req, res, next) =>
      counted(req, res, (err?: unknown) => {
        if (err) return next(err);
        const info = infoOf(req);
        // Always there as configured (no skip, store errors not passed over); a limiter that let a request
        // through uncounted would leave none, and no headers are better than made-up ones.
        if (info) setDraft8Headers(res, identifier, windowMs, info);
        next();
      })) as RequestHandler;
  };
  const requests = limiter('requests', 'requests', 60_000, settings.perMinute, (req, res) => {
    const principal = res.locals.principal as Principal | undefined;
    if (principal?.kind === 'user') return `user:${principal.userId}`;
    if (principal?.kind === 'api_key') return `key:${principal.keyId}`;
    if (principal?.kind === 'visitor') return `visitor:${principal.visitorId}`;
    return `addr:${clientAddress(req)}`;
  });
  // Each applies to one operation, and only its own is called: seven limiters that each decided to skip
  // (each an async middleware reading the client address on its way) were 50 µs of every request.
  const byOperation = new Map<string, RequestHandler>([
    ['login', limiter('login', 'login', 15 * 60_000, settings.login, (req) => `${emailOf(req)}|${clientAddress(req)}`)],
    ['forgotPassword', limiter('forgot', 'forgot-password', 60 * 60_000, settings.forgotPassword, (req) => emailOf(req))],
    // The public widget API faces the open internet: tighter budgets per address and per visitor.
    ['startWidgetSession', limiter('widget-sessions', 'widget-sessions', 60_000, settings.widgetSessions, (req) => clientAddress(req))],
    ['startWidgetConversation', limiter('widget-conversations', 'widget-conversations', 60 * 60_000, settings.widgetConversations, visitorKey)],
    ['sendWidgetMessage', limiter('widget-messages', 'widget-messages', 60_000, settings.widgetMessages, visitorKey)],
    ['uploadWidgetFile', limiter('widget-uploads', 'widget-uploads', 60 * 60_000, settings.widgetUploads, visitorKey)],
  ]);
  return (req, res, next) => {
    const operationId = operationIdOf(req);
    if (operationId !== undefined && UNLIMITED_OPERATIONS.has(operationId)) return next();
    const own = operationId === undefined ? undefined : byOperation.get(operationId);
    void requests(req, res, own ? (err?: unknown) => (err ? next(err) : void own(req, res, next)) : next);
  };
}
