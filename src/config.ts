import { availableParallelism } from 'node:os';
import { bool, cleanEnv, makeValidator, num, str, url } from 'envalid';
import { parsePlans } from './billing/plans.ts';

// Every variable the service reads. Validation reports all bad variables at once, not the first.
const postgresOrPgliteUrl = makeValidator<string>((value) => {
  if (/^postgres(ql)?:\/\//.test(value) || /^pglite:\/\//.test(value)) return value;
  throw new Error('must be a postgres:// URL (or pglite://memory, pglite:///path for the embedded database)');
});

const s3Url = makeValidator<string>((value) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('must be s3://bucket?endpoint=http://host:9000&region=us-east-1');
  }
  if (url.protocol !== 's3:' || !url.hostname) throw new Error('must be s3://bucket?endpoint=http://host:9000&region=us-east-1');
  const endpoint = url.searchParams.get('endpoint');
  if (endpoint !== null && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) throw new Error('endpoint must be http(s)://host[:port]');
  return value;
});

const positiveInt = (min: number, max: number) =>
  makeValidator<number>((value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
    return n;
  });

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

// "5s,5m,30m,2h": delays in milliseconds, each at most a week.
const durationList = makeValidator<number[]>((value) => {
  const delays = value.split(',').map((part) => {
    const match = /^\s*(\d+)(ms|s|m|h|d)\s*$/.exec(part);
    if (!match) throw new Error('must be durations like 5s,5m,30m,2h separated by commas');
    return Number(match[1]) * DURATION_UNITS[match[2]!]!;
  });
  if (delays.length > 20 || delays.some((ms) => ms > 7 * 86_400_000)) throw new Error('at most 20 delays, each at most 7d');
  return delays;
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
      DEPENDENCY_PATCHES: bool({ default: true, desc: 'the fast paths that replace internals of pg (a transaction\'s BEGIN sent with its first statement) and express-openapi-validator (route lookup, validator compilation, parameter rewriting); off runs both libraries as published (docs/architecture.md)' }),
      DATABASE_NAMED_STATEMENTS: bool({ default: true, desc: 'keep the hot statements prepared, per connection on PostgreSQL and once in the embedded database (off behind PgBouncer in transaction mode before 1.21)' }),
      PGLITE_TEMPLATE: bool({ default: true, desc: 'an empty embedded database starts as a copy of the template built at install (npm run pglite:template)' }),
      PGLITE_THREAD: bool({ default: true, desc: 'the embedded database runs on a thread of its own (two cores instead of one, and it opens while the service loads); off runs it on the event loop' }),
      REDIS_URL: url({ default: undefined }),
      REDIS_TIMEOUT_MS: positiveInt(5, 10_000)({ default: 50, desc: 'the longest a request waits on a Redis command; past it the request goes on without Redis (or answers 503 where Redis is needed)' }),
      REDIS_DOWN_POLL_MS: positiveInt(50, 60_000)({ default: 250, desc: 'while the Redis subscription is away, how often each instance reads the event feed for the tenants it has sockets of' }),
      JWT_SECRET: str({ default: '', desc: 'HS256 key for access tokens; required in production' }),
      SECRETS_KEY: str({ default: '', desc: 'key material that seals stored secrets (an llm bot API key); unset: JWT_SECRET' }),
      BCRYPT_COST: positiveInt(4, 15)({ default: 12 }),
      PASSWORD_THREADS: positiveInt(0, 64)({ default: 0, desc: 'worker threads for password hashing; 0: one less than the cores' }),
      LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
      VALIDATE_RESPONSES: bool({ default: true, desc: 'check every response against the contract' }),
      SHUTDOWN_TIMEOUT_MS: num({ default: 10_000 }),
      SESSION_CACHE_MS: positiveInt(0, 300_000)({ default: 30_000, desc: 'how long a live login is trusted without a database check; changes evict at once; 0 turns it off' }),
      APP_URL: url({ default: 'http://localhost:3000/app', desc: 'web app that mail links open (the team app the service serves at /app)' }),
      SMTP_URL: url({ default: undefined, desc: 'smtp://user:pass@host:587; unset writes mail to DATA_DIR/mail' }),
      MAIL_FROM: str({ default: 'Customer Chat <no-reply@customer-chat.local>' }),
      RATE_LIMIT_PER_MINUTE: positiveInt(1, 1_000_000)({ default: 1200, desc: 'requests a minute per user, API key or address' }),
      LOGIN_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 10, desc: 'logins per 15 minutes per e-mail and address' }),
      FORGOT_PASSWORD_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 5, desc: 'reset mails an hour per e-mail' }),
      WIDGET_SESSION_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 30, desc: 'widget sessions a minute per address' }),
      WIDGET_CONVERSATION_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 10, desc: 'conversations a visitor may start an hour' }),
      WIDGET_MESSAGE_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 60, desc: 'messages a visitor may send a minute' }),
      WIDGET_UPLOAD_RATE_LIMIT: positiveInt(1, 1_000_000)({ default: 30, desc: 'files a visitor may upload an hour' }),
      STORAGE_URL: s3Url({ default: undefined, desc: 's3://bucket?endpoint=…&region=…; unset keeps files under DATA_DIR/files' }),
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
      DELIVERY_RETENTION_DAYS: positiveInt(1, 3650)({ default: 30, desc: 'finished webhook deliveries, bot deliveries and workflow runs are deleted this long after' }),
      FILE_ORPHAN_HOURS: positiveInt(1, 8760)({ default: 24, desc: 'files never attached to a message are deleted this long after upload' }),
      WEBHOOK_ALLOW_PRIVATE: bool({ default: false, desc: 'let webhooks reach loopback, private, link-local and metadata addresses' }),
      WEBHOOK_TIMEOUT_MS: positiveInt(100, 60_000)({ default: 10_000, desc: 'a delivery attempt without a 2xx by then failed' }),
      WEBHOOK_RETRY_SCHEDULE: durationList({ default: [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000], desc: 'delays before each retry; after the last, failed' }),
      WEBHOOK_CONCURRENCY: positiveInt(1, 1000)({ default: 16, desc: 'delivery attempts in flight per instance' }),
      WEBHOOK_ENDPOINT_CONCURRENCY: positiveInt(1, 1000)({ default: 8, desc: 'attempts in flight to one slow endpoint (one that takes over a second or does not answer)' }),
      WEBHOOK_POLL_MS: positiveInt(50, 600_000)({ default: 1000, desc: 'how often an instance looks for due deliveries and unread events' }),
      METRICS_TOKEN: str({ default: '', desc: 'bearer token of GET /api/metrics; unset, the endpoint is off' }),
      METRICS_QUEUE_CACHE_MS: positiveInt(0, 60_000)({ default: 5_000, desc: 'how long a reading of the webhook, workflow and bot queues serves scrapes; 0 reads them at every scrape' }),
      OTEL_EXPORTER_OTLP_ENDPOINT: url({ default: undefined, desc: 'OTLP/HTTP collector; set, requests are traced' }),
      STRIPE_SECRET_KEY: str({ default: '', desc: 'Stripe secret key; unset: every tenant is on the self-hosted plan' }),
      STRIPE_WEBHOOK_SECRET: str({ default: '', desc: 'signing secret of the Stripe webhook endpoint (whsec_...)' }),
      BILLING_PLANS: str({ default: '', desc: 'JSON: plans by id, merged over the defaults; self_hosted may carry limits (docs/billing.md)' }),
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
  if (e.METRICS_TOKEN && e.METRICS_TOKEN.length < 16) problems.METRICS_TOKEN = 'at least 16 characters';
  if (Boolean(e.TLS_CERT_FILE) !== Boolean(e.TLS_KEY_FILE)) problems[e.TLS_CERT_FILE ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE'] = 'TLS needs both TLS_CERT_FILE and TLS_KEY_FILE';
  if (e.STORAGE_URL) {
    const url = new URL(e.STORAGE_URL);
    if (!(url.username && url.password) && !(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)) {
      problems.STORAGE_URL = 'needs credentials: s3://KEY:SECRET@bucket?…, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY';
    }
  }
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
    databaseNamedStatements: e.DATABASE_NAMED_STATEMENTS,
    dependencyPatches: e.DEPENDENCY_PATCHES,
    pgliteTemplate: e.PGLITE_TEMPLATE,
    pgliteThread: e.PGLITE_THREAD,
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    redisDownPollMs: e.REDIS_DOWN_POLL_MS,
    jwtSecret: e.JWT_SECRET || undefined,
    secretsKey: e.SECRETS_KEY || undefined,
    bcryptCost: e.BCRYPT_COST,
    // Hashing must leave a core to the event loop, or every request waits behind the logins.
    passwordThreads: e.PASSWORD_THREADS || Math.max(1, availableParallelism() - 1),
    logLevel: e.LOG_LEVEL,
    validateResponses: e.VALIDATE_RESPONSES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    sessionCacheMs: e.SESSION_CACHE_MS,
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
      widgetUploads: e.WIDGET_UPLOAD_RATE_LIMIT,
    },
    storageUrl: e.STORAGE_URL,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    requireHttps: e.REQUIRE_HTTPS ?? e.NODE_ENV === 'production',
    metricsToken: e.METRICS_TOKEN || undefined,
    metricsQueueCacheMs: e.METRICS_QUEUE_CACHE_MS,
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    tls: e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } : undefined,
    retention: {
      intervalMs: e.RETENTION_INTERVAL_MINUTES * MINUTE,
      idempotencyKeyMs: e.IDEMPOTENCY_KEY_RETENTION_HOURS * HOUR,
      refreshTokenMs: e.REFRESH_TOKEN_RETENTION_HOURS * HOUR,
      mailTokenMs: e.MAIL_TOKEN_RETENTION_HOURS * HOUR,
      pageViewMs: e.PAGE_VIEW_RETENTION_DAYS * DAY,
      eventMs: e.EVENT_RETENTION_DAYS * DAY,
      deliveryMs: e.DELIVERY_RETENTION_DAYS * DAY,
    },
    fileOrphanMs: e.FILE_ORPHAN_HOURS * HOUR,
    webhooks: {
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      requireHttps: e.NODE_ENV === 'production',
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryDelaysMs: e.WEBHOOK_RETRY_SCHEDULE,
      concurrency: e.WEBHOOK_CONCURRENCY,
      endpointConcurrency: Math.min(e.WEBHOOK_ENDPOINT_CONCURRENCY, e.WEBHOOK_CONCURRENCY),
      pollMs: e.WEBHOOK_POLL_MS,
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
