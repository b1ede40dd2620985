// The service: its database, app, realtime gateway and background work (src/server.ts is the entry point).
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import pino from 'pino';
import { buildApp, prepareValidator, warmValidator } from './app.ts';
import { loadContract } from './http/contract.ts';
import { EventBus } from './events/bus.ts';
import { LocalFanout, RedisFanout } from './realtime/fanout.ts';
import { RealtimeGateway } from './realtime/gateway.ts';
import { MemoryPresenceTracker, RedisPresenceTracker } from './realtime/presence-tracker.ts';
import { RoutingPresence } from './routing/presence-wakeup.ts';
import { returnTimerJob } from './routing/routing.service.ts';
import { MemoryTicketStore, RedisTicketStore } from './realtime/tickets.ts';
import { PasswordHasher } from './auth/password.ts';
import { TokenService } from './auth/tokens.ts';
import { LocalSessionChanges, RedisSessionChanges, SessionCache } from './auth/session-cache.ts';
import type { Config } from './config.ts';
import { openServiceDatabase } from './db/service-database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { foldJob } from './reports/fold.job.ts';
import { snoozeJob } from './snooze/snooze.service.ts';
import { orphanFileJob, retentionJobs } from './retention/retention.jobs.ts';
import { fileSigningKey } from './files/file.service.ts';
import { storageFromConfig } from './files/storage.ts';
import { resilientStoreFactory } from './http/rate-limit.ts';
import { openRedis } from './redis/link.ts';
import { createMailer } from './mail/mailer.ts';
import { Metrics } from './metrics/metrics.ts';
import { resolveJwtSecret } from './shared/secrets.ts';
import { WebhookDispatcher } from './webhooks/webhook.dispatcher.ts';
import { RedisFeedWakeups } from './events/wakeups.ts';
import { BotRunner } from './bots/bot.runner.ts';
import { WorkflowRunner, idleJob } from './workflows/workflow.runner.ts';
import { TenantInterest } from './events/tenant-interest.ts';
import type { Database, Tx } from './db/database.ts';
import { tenantsWithEnabledWebhooks } from './webhooks/webhook.repository.ts';
import { tenantsWithBots } from './bots/bot.repository.ts';
import { tenantsWithEnabledWorkflows } from './workflows/workflow.repository.ts';
import { SecretBox } from './shared/secret-box.ts';

// node:http and node:https are taken with process.getBuiltinModule, not imported: an ESM import of node:http
// makes Node load its bundled undici (http.WebSocket) at start, tens of milliseconds of every restart.
const { createServer } = process.getBuiltinModule('node:http');
const { createServer: createTlsServer } = process.getBuiltinModule('node:https');

export interface RunningService {
  server: Server;
  gateway: RealtimeGateway;
  scheduler: Scheduler;
  webhooks: WebhookDispatcher;
  bots: BotRunner;
  workflows: WorkflowRunner;
  url: string;
  stop(): Promise<void>;
}

const errorLogger = (logger: pino.Logger, message: string) => {
  // A Redis outage reports the same error at every reconnection attempt: said once every ten seconds.
  let last = '';
  let at = 0;
  return (err: unknown) => {
    const text = err instanceof Error ? err.message : String(err);
    if (text === last && Date.now() - at < 10_000) return;
    last = text;
    at = Date.now();
    logger.error({ err }, message);
  };
};

/** `opening`: the database already being opened (src/server.ts opens the embedded one while this module loads). */
export async function startService(config: Config, opening?: Promise<Database>): Promise<RunningService> {
  const logger = pino({ level: config.logLevel });
  // The contract and its validator need no database: made while it opens (the embedded one on its thread).
  const contract = loadContract();
  const validator = prepareValidator(contract, config);
  // And what it makes at its first request, made while this thread would wait for the database.
  const warming = warmValidator(validator);
  const database = await (opening ?? openServiceDatabase(config, (err) => logger.warn({ err }, 'database connection lost')));
  // Said before, so that an instance waiting on another's migration lock shows where it waits.
  logger.info({ database: database.kind }, 'database open; migrating');
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
  const jwtSecret = await resolveJwtSecret(config.jwtSecret, config.dataDir);
  const tokens = new TokenService(jwtSecret);
  // What the service seals (an llm bot's API key) opens on every instance that has the same key.
  const secrets = new SecretBox(config.secretsKey ?? jwtSecret);
  const storage = storageFromConfig(config);
  const passwords = new PasswordHasher(config.bcryptCost, config.passwordThreads);
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, logger });
  // With Redis, every instance shares presence, tickets, rate limits and event notifications; while it is
  // away each instance goes on with its own (src/redis/link.ts), and nothing waits on it past its budget.
  const redis = config.redisUrl
    ? await openRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, onError: errorLogger(logger, 'redis error') })
    : undefined;
  const onSubscriberError = errorLogger(logger, 'redis subscriber error');
  const bus = new EventBus();
  const metrics = new Metrics({ processMetrics: true, queueCacheMs: config.metricsQueueCacheMs });
  // A member coming online wakes routing: their tenant's queue may have someone to go to now.
  const presence = new RoutingPresence(redis ? new RedisPresenceTracker(redis) : new MemoryPresenceTracker());
  const tickets = redis ? new RedisTicketStore(redis) : new MemoryTicketStore();
  const fanout = redis ? await RedisFanout.create(redis, { pollMs: config.redisDownPollMs, onError: onSubscriberError }) : new LocalFanout();
  const sessions = new SessionCache(redis ? await RedisSessionChanges.create(redis, onSubscriberError) : new LocalSessionChanges(), config.sessionCacheMs);
  let stopping: Promise<void> | undefined;
  const { app, services } = buildApp({
    config,
    logger,
    database,
    tokens,
    passwords,
    mailer,
    bus,
    presence,
    tickets,
    sessions,
    // Every instance derives the same key, so a link signed by one is served by any.
    files: { storage, signingKey: fileSigningKey(jwtSecret) },
    secrets,
    metrics,
    ...(redis ? { rateLimitStore: resilientStoreFactory((...args: string[]) => redis.run((client) => client.sendCommand(args))), redis } : {}),
    draining: () => stopping !== undefined,
  }, { contract, validator });

  presence.onMemberOnline((tenantId) => void services.routing.wake(tenantId));

  const server = config.tls
    ? createTlsServer({ cert: await readFile(config.tls.certFile), key: await readFile(config.tls.keyFile) }, app)
    : createServer(app);
  await warming;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const gateway = new RealtimeGateway({
    database,
    bus,
    fanout,
    tokens,
    tickets,
    presence,
    findSession: (tenantId, userId, sessionId) => services.tenants.findSession(tenantId, userId, sessionId),
    sessionChanges: sessions,
    findApiKey: (key) => services.apiKeys.authenticate(key),
    apiKeyLive: (keyHash) => services.apiKeys.isLive(keyHash),
    authenticateVisitor: (token, origin) => services.widgetPublic.authenticate(token, origin),
    logger,
    // Resume answers past_retention for an event older than the retention job keeps.
    options: { retentionMs: config.retention.eventMs },
    onDelivered: (createdAt, frames) => metrics.delivered(createdAt, frames),
  });
  // Tracing is imported only when asked for: without an endpoint it costs nothing.
  const tracing = config.otlpEndpoint ? await import('./telemetry/tracing.ts') : undefined;
  if (tracing && config.otlpEndpoint) {
    if (!tracing.tracingStarted()) {
      logger.warn('OTEL_EXPORTER_OTLP_ENDPOINT is set but the service was not started through src/telemetry/preload.ts: database spans are missing');
      tracing.startTracing(config.otlpEndpoint);
    }
    tracing.traceUpgrades(server);
  }
  gateway.attach(server);
  metrics.observeSockets(() => gateway.connectionsByAudience());
  // Periodic work, each job run by one instance at a time; later jobs (webhook retries, ...) join here.
  const scheduler = new Scheduler({
    database,
    logger,
    jobs: [
      ...retentionJobs(config.retention),
      orphanFileJob(storage, { intervalMs: config.retention.intervalMs, ageMs: config.fileOrphanMs }),
      // Idle conversations are looked for every minute: an idle workflow fires within about a minute and a half.
      idleJob({ bus, intervalMs: 60_000 }),
      // Return timers are looked at every 30 seconds: a conversation moves within half a minute of its expiry.
      returnTimerJob(services.routing, 30_000),
      // Snoozes are looked at every 30 seconds: a conversation is back within half a minute of its time.
      snoozeJob(services.snooze, 30_000),
      // Report facts waiting for their rollups are folded every 30 seconds (reports fold their own first).
      foldJob(30_000),
    ],
  });
  scheduler.start();
  const wakeups = redis ? await RedisFeedWakeups.create(redis, onSubscriberError) : undefined;
  // Each reader of the feed is woken only by commits of tenants it has work for (src/events/tenant-interest.ts).
  const interestIn = (load: (trx: Tx) => Promise<string[]>) =>
    new TenantInterest(() => database.asSystem(load), { onError: (err) => logger.warn({ err }, 'could not read which tenants the feed readers serve') });
  const interest = {
    webhooks: interestIn(tenantsWithEnabledWebhooks),
    bots: interestIn(tenantsWithBots),
    workflows: interestIn(tenantsWithEnabledWorkflows),
  };
  services.webhooks.onEndpointsChanged(() => interest.webhooks.changed());
  services.bots.onBotsChanged(() => interest.bots.changed());
  services.workflows.onWorkflowsChanged(() => interest.workflows.changed());
  for (const each of Object.values(interest)) each.start();
  // Every commit of this instance wakes the feed's consumers on the others, and theirs wake these.
  const stopRelay = wakeups?.relay(bus);
  const webhooks = new WebhookDispatcher({ database, logger, bus, mailer, ...config.webhooks, wakeups, metrics, interest: interest.webhooks });
  services.webhooks.onDeliveryDue(() => webhooks.wake());
  webhooks.start();
  // Bots hear of their conversations through the same outbox, with the webhooks' address rule and timeout.
  const bots = new BotRunner({
    database,
    logger,
    bus,
    allowPrivate: config.webhooks.allowPrivate,
    timeoutMs: config.webhooks.timeoutMs,
    pollMs: config.webhooks.pollMs,
    services: { messages: services.messages, conversations: services.conversations, cannedResponses: services.cannedResponses },
    metrics,
    interest: interest.bots,
    wakeups,
    secrets,
  });
  bots.start();
  const workflows = new WorkflowRunner({
    database,
    logger,
    bus,
    mailer,
    conversations: services.conversations,
    allowPrivate: config.webhooks.allowPrivate,
    timeoutMs: config.webhooks.timeoutMs,
    metrics,
    interest: interest.workflows,
    wakeups,
  });
  workflows.start();
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `${config.tls ? 'https' : 'http'}://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
  logger.info({ url, database: database.kind }, 'listening');
  // The password threads start now that the service answers (src/auth/password.ts).
  passwords.warm();

  const stop = () =>
    (stopping ??= (async () => {
      // From here /api/ready answers 503, and the sockets are told first (1001, going away): they
      // reconnect through the balancer to another instance while this one finishes its work.
      logger.info('shutting down');
      await gateway.close();
      await scheduler.stop();
      await Promise.all(Object.values(interest).map((each) => each.stop()));
      await webhooks.stop();
      await bots.stop();
      stopRelay?.();
      await wakeups?.close();
      await workflows.stop();
      await sessions.close();
      // Stop accepting, let in-flight requests finish, then drop idle keep-alive connections.
      // A keep-alive connection whose last response just finished turns idle after close() was called,
      // so idle connections are swept until the server is closed, not once.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await closed;
      clearInterval(sweep);
      clearTimeout(deadline);
      await passwords.close();
      await mailer.close();
      redis?.close();
      await database.close();
      await tracing?.stopTracing();
      logger.info('stopped');
    })());
  return { server, gateway, scheduler, webhooks, bots, workflows, url, stop };
}
