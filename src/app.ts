import { hash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Logger } from 'pino';
import type Stripe from 'stripe';
import { apiKeyHandlers } from './api-keys/api-key.handlers.ts';
import { ApiKeyService } from './api-keys/api-key.service.ts';
import { authHandlers } from './auth/auth.handlers.ts';
import { billingHandlers, keepRawBody } from './billing/billing.handlers.ts';
import { BillingService } from './billing/billing.service.ts';
import { AuthService } from './auth/auth.service.ts';
import type { PasswordHasher } from './auth/password.ts';
import type { TokenService } from './auth/tokens.ts';
import { SessionCache } from './auth/session-cache.ts';
import type { Config } from './config.ts';
import type { Principal } from './shared/principal.ts';
import type { Database } from './db/database.ts';
import { cannedResponseHandlers } from './canned-responses/canned-response.handlers.ts';
import { CannedResponseService } from './canned-responses/canned-response.service.ts';
import { contactHandlers } from './contacts/contact.handlers.ts';
import { ContactService } from './contacts/contact.service.ts';
import { conversationHandlers } from './conversations/conversation.handlers.ts';
import { ConversationService } from './conversations/conversation.service.ts';
import { departmentHandlers } from './departments/department.handlers.ts';
import { hoursHandlers } from './hours/hours.handlers.ts';
import { HoursService } from './hours/hours.service.ts';
import { routingHandlers } from './routing/routing.handlers.ts';
import { RoutingService } from './routing/routing.service.ts';
import { fileHandlers } from './files/file.handlers.ts';
import { defaultFileDeps, FileService } from './files/file.service.ts';
import type { FileStorage } from './files/storage.ts';
import { DepartmentService } from './departments/department.service.ts';
import { healthHandlers } from './health/health.handlers.ts';
import type { RedisLink } from './redis/link.ts';
import { accessMiddleware, type AccessDeps } from './http/access.ts';
import { type Contract, type Handlers, loadContract, mountOperations } from './http/contract.ts';
import { contractDocsRouter } from './http/docs.ts';
import { mailPagesRouter } from './pages/mail-pages.ts';
import { teamAppRouter } from './http/team-app.ts';
import { requireHttps } from './http/https.ts';
import { inputGuard } from './http/input-guard.ts';
import { declaredBodyParser, undeclaredBody } from './http/undeclared-body.ts';
import { metricsEndpoint, operationOf, requestMetrics } from './http/metrics.ts';
import { requestLog } from './http/request-log.ts';
import { errorHandler, notFoundHandler } from './http/problem.ts';
import { type RateLimitStoreFactory, rateLimiters } from './http/rate-limit.ts';
import type { Mailer } from './mail/mailer.ts';
import { Metrics } from './metrics/metrics.ts';
import { EventBus } from './events/bus.ts';
import { EventService } from './events/event.service.ts';
import { messageHandlers } from './conversations/message.handlers.ts';
import { MessageService } from './conversations/message.service.ts';
import { everyoneOffline, type PresenceStore } from './presence/presence.ts';
import { TeamService } from './team/team.service.ts';
import { visitorHandlers } from './visitors/visitor.handlers.ts';
import { teamHandlers } from './team/team.handlers.ts';
import { eventHandlers } from './events/event.handlers.ts';
import { ticketHandlers } from './realtime/ticket.handlers.ts';
import { VisitorService } from './visitors/visitor.service.ts';
import { widgetHandlers } from './widgets/widget.handlers.ts';
import { sameOriginWidgetRequests, widgetPreflight, widgetPublicHandlers } from './widgets/widget-public.handlers.ts';
import { WidgetPublicService } from './widgets/widget-public.service.ts';
import { WidgetService } from './widgets/widget.service.ts';
import { widgetScript } from './widgets/widget-script.ts';
import { MemoryTicketStore, type TicketStore } from './realtime/tickets.ts';
import { tenantHandlers } from './tenants/tenant.handlers.ts';
import { createTenantWithOwner, TenantService } from './tenants/tenant.service.ts';
import { webhookHandlers } from './webhooks/webhook.handlers.ts';
import { WebhookService } from './webhooks/webhook.service.ts';
import { botHandlers } from './bots/bot.handlers.ts';
import { BotService } from './bots/bot.service.ts';
import { workflowHandlers } from './workflows/workflow.handlers.ts';
import { labelHandlers } from './labels/label.handlers.ts';
import { LabelService } from './labels/label.service.ts';
import { snoozeHandlers } from './snooze/snooze.handlers.ts';
import { SnoozeService } from './snooze/snooze.service.ts';
import { searchHandlers } from './search/search.handlers.ts';
import { SearchService } from './search/search.service.ts';
import { reportHandlers } from './reports/report.handlers.ts';
import { ReportService } from './reports/report.service.ts';
import { WorkflowService } from './workflows/workflow.service.ts';
import { skipPlainParameterMutation } from './http/parameter-mutator.ts';
import { indexRouteLookup } from './http/route-lookup.ts';
import { compileValidatorsWithoutPaths } from './http/validator-compile.ts';
import { prepareContractLazily } from './http/validator-startup.ts';
import { SecretBox } from './shared/secret-box.ts';
import { TENANT_ID } from './shared/ids.ts';

// Taken with process.getBuiltinModule, not imported: an ESM import of node:http makes Node load its bundled
// undici (http.WebSocket) at every start (eslint.config.js refuses the import).
const { createServer, request: httpRequest } = process.getBuiltinModule('node:http');

export const JSON_BODY_LIMIT_BYTES = 1024 * 1024;

export interface AppDeps {
  config: Pick<Config, 'validateResponses' | 'appUrl' | 'rateLimits' | 'trustProxy' | 'requireHttps'> & {
    retention?: Pick<Config['retention'], 'idempotencyKeyMs'>;
    /** Which webhook URLs are accepted; default: any http(s) address (tests). */
    webhooks?: Pick<Config['webhooks'], 'allowPrivate' | 'requireHttps'>;
    /** The validator's fast paths (route lookup, compilation, parameter rewriting); default on. DEPENDENCY_PATCHES. */
    dependencyPatches?: boolean;
    /** Bearer token of GET /api/metrics; unset, the endpoint does not exist. */
    metricsToken?: string | undefined;
    /** Unset: no payment provider (the self-hosted plan). */
    billing?: Config['billing'];
  };
  logger: Logger;
  database: Database;
  tokens: TokenService;
  passwords: PasswordHasher;
  mailer: Mailer;
  /** Where rate-limit counters live; undefined: in this process. */
  rateLimitStore?: RateLimitStoreFactory;
  /** The shared Redis, when there is one: readiness says whether it answers. */
  redis?: RedisLink;
  /** True once the instance is shutting down: readiness answers 503 from then on. */
  draining?: () => boolean;
  /** Committed events are published here; the realtime gateway listens. */
  bus?: EventBus;
  presence?: PresenceStore;
  /** Tickets for browsers' WebSocket connections (Redis-backed with several instances). */
  tickets?: TicketStore;
  /** Live logins remembered briefly; changes reach every instance (Redis-backed with several instances). */
  sessions?: SessionCache;
  /** Where uploads go and the key that signs local download links; undefined: local disk in the temp directory. */
  files?: { storage: FileStorage; signingKey: Buffer | string };
  /** Where the app's metrics go (the service's one registry); undefined: a registry of its own. */
  metrics?: Metrics;
  /**
   * Seals secrets kept but never shown again (an llm bot's API key); the bot runner must open them with a
   * box of the same key. Undefined: a key of this process alone (what it seals, no other process opens).
   */
  secrets?: SecretBox;
  /** A Stripe client to use instead of one made from the secret key (tests point it at a local server). */
  stripe?: Stripe;
}

export interface AppOptions {
  /** Replaces handlers by operationId (tests use it to make a handler misbehave on purpose). */
  handlers?: Partial<Handlers>;
  contract?: Contract;
  /** The validator made beforehand (prepareValidator) from the same contract and configuration. */
  validator?: PreparedValidator;
}

export function createServices(deps: AppDeps) {
  const { database, mailer, logger } = deps;
  const appUrl = deps.config.appUrl;
  const bus = deps.bus ?? new EventBus();
  const presence = deps.presence ?? everyoneOffline;
  const sessions = deps.sessions ?? new SessionCache();
  const billing = new BillingService({ database, logger, appUrl, config: deps.config.billing, stripe: deps.stripe });
  const team = new TeamService({ database, presence });
  const routing = new RoutingService({ database, bus, presence });
  // Transfers and handoffs go through routing (which sits above conversations: it is passed in).
  const conversations = new ConversationService({ database, bus, presence, limits: billing, routing: routing.forConversations() });
  return {
    bus,
    sessions,
    billing,
    auth: new AuthService({ database, passwords: deps.passwords, tokens: deps.tokens, mailer, appUrl, logger, sessions, createTenant: createTenantWithOwner }),
    tenants: new TenantService({ database, mailer, appUrl, logger, bus, sessions, limits: billing }),
    departments: new DepartmentService(database),
    hours: new HoursService(database),
    apiKeys: new ApiKeyService(database, sessions),
    conversations,
    // Labels and snooze answer the conversation as the conversations feature shows it to the caller.
    labels: new LabelService({ database, bus, view: (principal, id) => conversations.get(principal, id) }),
    snooze: new SnoozeService({ database, bus, view: (principal, id) => conversations.get(principal, id) }),
    search: new SearchService(database),
    reports: new ReportService(database),
    messages: new MessageService({ database, bus, idempotencyKeyRetentionMs: deps.config.retention?.idempotencyKeyMs }),
    contacts: new ContactService(database),
    cannedResponses: new CannedResponseService(database),
    visitors: new VisitorService(database),
    team,
    events: new EventService(database),
    tickets: deps.tickets ?? new MemoryTicketStore(),
    metrics: deps.metrics ?? new Metrics(),
    widgets: new WidgetService(database),
    routing,
    widgetPublic: new WidgetPublicService({ database, bus, tokens: deps.tokens, limits: billing, team: routing }),
    files: new FileService({ database, ...(deps.files ?? defaultFileDeps()), limits: billing }),
    webhooks: new WebhookService({ database, bus, policy: deps.config.webhooks ?? { allowPrivate: true, requireHttps: false } }),
    bots: new BotService({ database, policy: deps.config.webhooks ?? { allowPrivate: true, requireHttps: false }, secrets: deps.secrets ?? processSecretBox() }),
    // A workflow's webhook action goes where a webhook endpoint may.
    workflows: new WorkflowService({ database, policy: deps.config.webhooks ?? { allowPrivate: true, requireHttps: false } }),
  };
}

export type Services = ReturnType<typeof createServices>;

let processBox: SecretBox | undefined;
const processSecretBox = () => (processBox ??= new SecretBox(randomBytes(32).toString('hex')));

const EMPTY_ETAG = 'W/"0-2jmj7l5rSw0yVb/vlWAYkK/YBwk"';

/** Express's default ETag, weak: `W/"<length in hex>-<27 characters of base64 SHA-1>"` (the etag package's). */
function weakEtag(body: string | Buffer): string {
  const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
  return length === 0 ? EMPTY_ETAG : `W/"${length.toString(16)}-${hash('sha1', body, 'base64').slice(0, 27)}"`;
}

export function createApp(deps: AppDeps, options: AppOptions = {}): express.Express {
  return buildApp(deps, options).app;
}

/** The app and the services behind it (the WebSocket gateway authenticates with the same ones). */
export function buildApp(deps: AppDeps, options: AppOptions = {}): { app: express.Express; services: Services } {
  const contract = options.contract ?? loadContract();
  const services = createServices(deps);
  const handlers: Handlers = {
    ...healthHandlers(deps.database, deps.redis, deps.draining),
    ...authHandlers(services.auth),
    ...tenantHandlers(services.tenants),
    ...departmentHandlers(services.departments),
    ...hoursHandlers(services.hours),
    ...routingHandlers(services.routing),
    ...apiKeyHandlers(services.apiKeys),
    ...conversationHandlers(services.conversations),
    ...messageHandlers(services.messages),
    ...contactHandlers(services.contacts),
    ...cannedResponseHandlers(services.cannedResponses),
    ...visitorHandlers(services.visitors),
    ...teamHandlers(services.team),
    ...eventHandlers(services.events),
    ...widgetHandlers(services.widgets),
    ...widgetPublicHandlers(services.widgetPublic),
    ...fileHandlers(services.files),
    ...ticketHandlers(services.tickets),
    ...webhookHandlers(services.webhooks),
    ...botHandlers(services.bots),
    ...workflowHandlers(services.workflows),
    ...labelHandlers(services.labels),
    ...snoozeHandlers(services.snooze),
    ...searchHandlers(services.search),
    ...reportHandlers(services.reports),
    ...billingHandlers(services.billing),
    ...options.handlers,
  };
  const access: AccessDeps = {
    tokens: deps.tokens,
    findSession: (tenantId, userId, sessionId) => services.tenants.findSession(tenantId, userId, sessionId),
    findApiKey: (key) => services.apiKeys.authenticate(key),
    authenticateVisitor: (token, origin) => services.widgetPublic.authenticate(token, origin),
  };

  services.metrics.observeBus(services.bus);
  services.metrics.observePool(() => deps.database.poolStats());

  const app = express();
  app.disable('x-powered-by');
  // Express's own ETag, from a one-shot hash: creating a Hash object for every answer was 1.6% of a GET's CPU.
  app.set('etag', weakEtag);
  app.set('trust proxy', deps.config.trustProxy);
  app.use(requestLog(deps.logger, { fields: outcome }));
  app.use(requestMetrics(services.metrics));
  if (deps.config.requireHttps) app.use(requireHttps());
  // Outside the contract, which is the tenants' API: an operator's endpoint with its own credential.
  const metricsToken = deps.config.metricsToken;
  if (metricsToken) app.get(`${contract.basePath}/metrics`, metricsEndpoint(services.metrics, metricsToken));
  app.use(contract.basePath, contractDocsRouter(contract));
  // The chat bubble sites embed: a static script outside the API, which it calls like any other client.
  app.get('/widget.js', widgetScript());
  // The mail links open these when APP_URL is the service itself (its default).
  app.use(mailPagesRouter(contract.basePath));
  // The team inbox (app/), a client of the API like any other.
  app.use('/app', teamAppRouter(contract.basePath));
  app.use(`${contract.basePath}/v1/widget`, sameOriginWidgetRequests(), widgetPreflight(services.widgetPublic));
  // Stripe signs the webhook's exact bytes: that route reads its body raw, before express.json could.
  app.post(`${contract.basePath}/v1/billing/webhook`, keepRawBody(JSON_BODY_LIMIT_BYTES));
  const json = declaredBodyParser(contract, express.json({ limit: JSON_BODY_LIMIT_BYTES, type: ['application/json', 'application/*+json'] }));
  const limits = rateLimiters(deps.config.rateLimits, deps.rateLimitStore ?? (() => undefined));
  const validator = options.validator ?? prepareValidator(contract, deps.config);
  if (validator.contract !== contract) throw new Error('the validator was prepared from another contract');
  app.use(withAccess(validator, [json, accessMiddleware(access), limits, inputGuard(contract), undeclaredBody(contract)]));
  const router = express.Router();
  mountOperations(router, contract, handlers);
  app.use(contract.basePath, router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return { app, services };
}

function outcome(req: express.Request, res: express.Response) {
  const principal = res.locals.principal as Principal | undefined;
  // Refused before authentication: the tenant the caller named, if it looks like one.
  const named = req.get('x-tenant-id');
  return {
    operation: operationOf(req, res.statusCode),
    status: res.statusCode,
    code: res.locals.problemCode as string | undefined,
    tenant_id: principal?.tenantId ?? (named && TENANT_ID.test(named) ? named : undefined),
    user_id: principal?.kind === 'user' ? principal.userId : undefined,
    key_id: principal?.kind === 'api_key' ? principal.keyId : undefined,
    visitor_id: principal?.kind === 'visitor' ? principal.visitorId : undefined,
  };
}

// express-openapi-validator's chain, with our access middleware (and the rate limits, which need to
// know the caller) in the place of its security step: after the operation is matched, before the
// request is validated. The body is parsed first there (a body over the limit is a 413 before a 401), only
// for operations that declare one; the input guard and the undeclared-body check come last: 401 and 403 before any 400.
/** express-openapi-validator's chain for a contract, made once; its security step is where access goes. */
export interface PreparedValidator {
  contract: Contract;
  chain: RequestHandler[];
}

/**
 * Makes the validator, which compiles the contract's schemas: it needs nothing but the contract, so the
 * service makes it while the embedded database opens on its thread (src/service.ts) rather than after.
 */
export function prepareValidator(contract: Contract, config: { validateResponses: boolean; dependencyPatches?: boolean | undefined }): PreparedValidator {
  return { contract, chain: validatorChain(contract, config.validateResponses, config.dependencyPatches !== false) };
}

/**
 * Runs one request (GET /health) through the validator's chain, on a server of its own that answers it
 * as the probe does (its response validated too), or 500 if the chain refuses it. The server listens on
 * a Unix socket, not a TCP port: a port of the system's choosing could be the one just chosen for the
 * service by whoever starts it (a test asks the system for a free port, then starts the service on it),
 * and a health check would then be answered by this server before the service listens. What
 * express-openapi-validator makes at its first request (its request and response validators, the
 * contract's schemas added to their Ajv, the route's validators) is then made while the service waits
 * for its database, instead of at the first request the service answers. The chain's steps are the ones the app mounts (withAccess copies the same functions). Never
 * rejects: a warm-up that fails leaves that work to the first request, as without it.
 */
export async function warmValidator(validator: PreparedValidator): Promise<void> {
  const warm = express();
  warm.use(validator.chain);
  warm.use((_req: express.Request, res: express.Response) => void res.json({ status: 'ok' }));
  warm.use((_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).end());
  const server = createServer(warm);
  // Linux's abstract namespace leaves no file behind; elsewhere a file in the temporary directory.
  const name = `customer-chat-warm-${process.pid}-${randomBytes(6).toString('hex')}`;
  const socketPath = process.platform === 'linux' ? `\0${name}` : join(tmpdir(), `${name}.sock`);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    await new Promise<void>((resolve) => {
      const req = httpRequest({ socketPath, path: `${validator.contract.basePath}/health`, agent: false }, (res) => {
        res.on('error', () => resolve());
        res.on('end', () => resolve());
        res.resume();
      });
      req.on('error', () => resolve());
      req.end();
    });
  } catch {
    // Left to the first request.
  } finally {
    server.close();
    if (!socketPath.startsWith('\0')) rmSync(socketPath, { force: true });
  }
}

function withAccess(validator: PreparedValidator, access: RequestHandler[]): RequestHandler[] {
  const chain = [...validator.chain];
  const securityStep = chain.findIndex((mw) => mw.name === 'securityMiddleware');
  if (securityStep === -1) throw new Error('express-openapi-validator no longer has a securityMiddleware step: revisit withAccess');
  chain.splice(securityStep, 1, ...access);
  return chain;
}

function validatorChain(contract: Contract, validateResponses: boolean, patched: boolean): RequestHandler[] {
  // They change the validator's modules for the whole process: once on, every app of the process has them.
  if (patched) {
    indexRouteLookup();
    compileValidatorsWithoutPaths();
    skipPlainParameterMutation();
    prepareContractLazily();
  }
  const chain = OpenApiValidator.middleware({
    // The validator copies the document before it changes anything in it (its middleware() does): not copied here too.
    apiSpec: contract.document as never,
    // The contract is checked where it is written (npm run lint:spec, test/integration/contract.test.ts); checking
    // it again against the OpenAPI schema on every start was most of the validator's start-up time.
    validateApiSpec: false,
    // allErrors: a client fixing a request wants every finding at once, not one per round trip.
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    validateFormats: true,
    // Uploads are read as a stream by their handlers (src/files/upload-stream.ts), never buffered by multer.
    fileUploader: false,
  }) as unknown as RequestHandler[];
  return chain;
}
