import { availableParallelism } from 'node:os';
import { bool, cleanEnv, makeValidator, num, str, url } from 'envalid';
import { parsePlans } from './billing/plans.ts';

// Every variable the service reads. Validation reports all bad variables at once, not the first.
const postgresOrPgliteUrl = makeValidator<string>((value) => {
  if (/^postgres(ql)?:\/\//.test(value) || /^pglite:\/\//.test(value)) return value;
  throw new Error('must be a postgres:// URL (or pglite://memory, pglite:///path for the embedded database)');
});

const positiveInt = (min: number, max: number) =>
  makeValidator<number>((value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
    return n;
  });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export class ConfigError extends Error {
  readonly problems: Record<string, string>;
  constructor(problems: Record<string, string>) {
    super(
      'Invalid configuration:\n' +
        Object.entries(problems)
          .map(([name, problem]) => `  ${name}: ${problem}`)
          .join('\n'),
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const e = cleanEnv(
    env,
    {
      NODE_ENV: str({ choices: ['development', 'test', 'production'], default: 'development' }),
      HOST: str({ default: '0.0.0.0', desc: 'address to listen on' }),
      PORT: positiveInt(0, 65535)({ default: 3000, desc: '0 picks any free port' }),
      DATA_DIR: str({ default: './data', desc: 'embedded database, dev secrets, mail and files' }),
      DATABASE_URL: postgresOrPgliteUrl({ default: undefined }),
      DATABASE_POOL_MAX: positiveInt(1, 1000)({ default: 10 }),
      REDIS_URL: url({ default: undefined }),
      JWT_SECRET: str({ default: '', desc: 'HS256 key for access tokens; required in production' }),
      BCRYPT_COST: positiveInt(4, 15)({ default: 12 }),
      PASSWORD_THREADS: positiveInt(0, 64)({ default: 0, desc: 'worker threads for password hashing; 0: one less than the cores' }),
      LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
      VALIDATE_RESPONSES: bool({ default: true, desc: 'check every response against the contract' }),
      SHUTDOWN_TIMEOUT_MS: num({ default: 10_000 }),
      APP_URL: url({ default: 'http://localhost:3000', desc: 'web app that mail links open' }),
      SMTP_URL: url({ default: undefined, desc: 'smtp://user:pass@host:587; unset writes mail to DATA_DIR/mail' }),
      MAIL_FROM: str({ default: 'Customer Chat <no-reply@customer-chat.local>' }),
      RATE_LIMIT_PER_MINUTE: positiveInt(1, 1_000_000)({ default: 1200, desc: 'requests a minute per user, API key or address' }),
      LOGIN_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 10, desc: 'logins per 15 minutes per e-mail and address' }),
      FORGOT_PASSWORD_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 5, desc: 'reset mails an hour per e-mail' }),
      WIDGET_SESSION_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 30, desc: 'widget sessions a minute per address' }),
      WIDGET_CONVERSATION_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 10, desc: 'conversations a visitor may start an hour' }),
      WIDGET_MESSAGE_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 60, desc: 'messages a visitor may send a minute' }),
      TRUST_PROXY: str({ default: 'loopback', desc: "express 'trust proxy': which proxies may set X-Forwarded-*" }),
      REQUIRE_HTTPS: bool({ default: undefined, desc: 'refuse plain HTTP; defaults to true in production' }),
      TLS_CERT_FILE: str({ default: undefined }),
      TLS_KEY_FILE: str({ default: undefined }),
      RETENTION_INTERVAL_MINUTES: positiveInt(1, 10_080)({ default: 60, desc: 'how often each retention job runs' }),
      IDEMPOTENCY_KEY_RETENTION_HOURS: positiveInt(1, 8760)({ default: 24, desc: 'an Idempotency-Key replays this long, then is deleted' }),
      REFRESH_TOKEN_RETENTION_HOURS: positiveInt(1, 8760)({ default: 24, desc: 'expired or revoked refresh tokens are deleted this long after' }),
      MAIL_TOKEN_RETENTION_HOURS: positiveInt(1, 8760)({ default: 24, desc: 'used or expired mail tokens are deleted this long after' }),
      PAGE_VIEW_RETENTION_DAYS: positiveInt(1, 3650)({ default: 30, desc: 'page views are deleted this long after' }),
      EVENT_RETENTION_DAYS: positiveInt(1, 3650)({ default: 7, desc: 'events are deleted this long after' }),
      STRIPE_SECRET_KEY: str({ default: '', desc: 'Stripe secret key; unset: every tenant is on the self-hosted plan' }),
      STRIPE_WEBHOOK_SECRET: str({ default: '', desc: 'signing secret of the Stripe webhook endpoint (whsec_...)' }),
      BILLING_PLANS: str({ default: '', desc: 'JSON: plans by id, merged over the defaults (README, Billing)' }),
    },
    {
      reporter: ({ errors }) => {
        const problems: Record<string, string> = {};
        for (const [name, error] of Object.entries(errors)) {
          if (error) problems[name] = error.message.replace(/^Missing environment variable "\w+"\.?\s*/, 'required');
        }
        if (Object.keys(problems).length > 0) throw new ConfigError(problems);
      },
    },
  );
  const problems: Record<string, string> = {};
  if (e.NODE_ENV === 'production' && e.JWT_SECRET.length < 32) problems.JWT_SECRET = 'required in production, at least 32 characters';
  if (Boolean(e.TLS_CERT_FILE) !== Boolean(e.TLS_KEY_FILE)) problems[e.TLS_CERT_FILE ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE'] = 'TLS needs both TLS_CERT_FILE and TLS_KEY_FILE';
  let plans: ReturnType<typeof parsePlans> = [];
  try {
    plans = parsePlans(e.BILLING_PLANS || undefined);
  } catch (err) {
    problems.BILLING_PLANS = (err as Error).message;
  }
  if (e.STRIPE_SECRET_KEY && !e.STRIPE_WEBHOOK_SECRET) problems.STRIPE_WEBHOOK_SECRET = 'required with STRIPE_SECRET_KEY (the webhook keeps subscriptions in step)';
  if (Object.keys(problems).length > 0) throw new ConfigError(problems);
  return {
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    redisUrl: e.REDIS_URL,
    jwtSecret: e.JWT_SECRET || undefined,
    bcryptCost: e.BCRYPT_COST,
    // Hashing must leave a core to the event loop, or every request waits behind the logins.
    passwordThreads: e.PASSWORD_THREADS || Math.max(1, availableParallelism() - 1),
    logLevel: e.LOG_LEVEL,
    validateResponses: e.VALIDATE_RESPONSES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    appUrl: e.APP_URL.replace(/\/$/, ''),
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    rateLimits: {
      perMinute: e.RATE_LIMIT_PER_MINUTE,
      login: e.LOGIN_RATE_LIMIT,
      forgotPassword: e.FORGOT_PASSWORD_RATE_LIMIT,
      widgetSessions: e.WIDGET_SESSION_RATE_LIMIT,
      widgetConversations: e.WIDGET_CONVERSATION_RATE_LIMIT,
      widgetMessages: e.WIDGET_MESSAGE_RATE_LIMIT,
    },
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    requireHttps: e.REQUIRE_HTTPS ?? e.NODE_ENV === 'production',
    tls: e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } : undefined,
    retention: {
      intervalMs: e.RETENTION_INTERVAL_MINUTES * MINUTE,
      idempotencyKeyMs: e.IDEMPOTENCY_KEY_RETENTION_HOURS * HOUR,
      refreshTokenMs: e.REFRESH_TOKEN_RETENTION_HOURS * HOUR,
      mailTokenMs: e.MAIL_TOKEN_RETENTION_HOURS * HOUR,
      pageViewMs: e.PAGE_VIEW_RETENTION_DAYS * DAY,
      eventMs: e.EVENT_RETENTION_DAYS * DAY,
    },
    billing: {
      stripe: e.STRIPE_SECRET_KEY ? { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET } : undefined,
      plans,
    },
  };
}

// 'true'/'false', a hop count, or a list of addresses and names express understands (loopback, 10.0.0.0/8, ...).
function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false' || value === '') return false;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}

export type Config = ReturnType<typeof loadConfig>;
