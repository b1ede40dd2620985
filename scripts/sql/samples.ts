// Sample arguments for every exported function of every repository (after the transaction, which
// `npm run sql` passes itself). The values do not appear in the snapshots (parameters print as $1, $2...);
// they choose the branches: give one case per shape of SQL a reviewer should see. A new repository gets
// a section here, keyed by its path under src/; the types check every argument against the function.
//
// A sample is the argument list, or { args, rows } where rows says how many rows each statement answers
// in order (default 1; 0 for "not found" branches), or { cases: { label: sample } }, or { skip: reason }
// for a function that sends no SQL of its own.
import type * as apiKey from '../../src/api-keys/api-key.repository.ts';
import type * as auth from '../../src/auth/auth.repository.ts';
import type * as billing from '../../src/billing/billing.repository.ts';
import type * as bot from '../../src/bots/bot.repository.ts';
import type * as cannedResponse from '../../src/canned-responses/canned-response.repository.ts';
import type * as contact from '../../src/contacts/contact.repository.ts';
import type * as conversation from '../../src/conversations/conversation.repository.ts';
import type * as department from '../../src/departments/department.repository.ts';
import type * as event from '../../src/events/event.repository.ts';
import type * as feed from '../../src/events/feed.repository.ts';
import type * as feedCursor from '../../src/events/feed-cursor.repository.ts';
import type * as queue from '../../src/events/queue.repository.ts';
import type * as file from '../../src/files/file.repository.ts';
import type * as hours from '../../src/hours/hours.repository.ts';
import type * as scheduler from '../../src/jobs/scheduler.repository.ts';
import type * as message from '../../src/conversations/message.repository.ts';
import type * as retention from '../../src/retention/retention.repository.ts';
import type * as routing from '../../src/routing/routing.repository.ts';
import type * as team from '../../src/team/team.repository.ts';
import type * as tenant from '../../src/tenants/tenant.repository.ts';
import type * as visitor from '../../src/visitors/visitor.repository.ts';
import type * as webhook from '../../src/webhooks/webhook.repository.ts';
import type * as widget from '../../src/widgets/widget.repository.ts';
import type * as workflow from '../../src/workflows/workflow.repository.ts';
import type * as label from '../../src/labels/label.repository.ts';
import type * as snooze from '../../src/snooze/snooze.repository.ts';
import type * as search from '../../src/search/search.repository.ts';
import type * as facts from '../../src/reports/facts.repository.ts';
import type * as report from '../../src/reports/report.repository.ts';

type Tail<T> = T extends [unknown, ...infer Rest] ? Rest : never;
type Case<A> = A | { args: A; rows?: number[] };
export type Sample<F> = F extends (...args: infer P) => unknown ? Case<Tail<P>> | { cases: Record<string, Case<Tail<P>>> } | { skip: string } : never;
type Samples<M> = { [K in keyof M as M[K] extends (...args: any[]) => unknown ? K : never]: Sample<M[K]> };

/** Every function of module M, each with a sample checked against its parameters. */
const of = <M>(samples: Samples<M>) => samples;

const NOW = new Date('2026-01-01T00:00:00Z');
const BYTES = Buffer.alloc(32);
const PAGE = { limit: 20, offset: 0 };
const AFTER = { at: NOW, id: 'id' };
const DAY = 86_400_000;

export const samples: Record<string, Record<string, unknown>> = {
  'api-keys/api-key.repository.ts': of<typeof apiKey>({
    insertApiKey: [{ id: 'key', tenant_id: 'tn', name: 'n', scopes: ['s'], prefix: 'p', key_hash: BYTES, created_by: 'usr' }],
    listLiveApiKeys: [PAGE],
    revokeApiKey: ['key', NOW],
    replaceApiKeySecret: ['key', { prefix: 'p', key_hash: BYTES }, NOW],
    replaceBotKeySecret: ['bot', { prefix: 'p', key_hash: BYTES }, NOW],
    findLiveApiKeyByHash: [BYTES],
    touchApiKey: ['key', NOW],
  }),
  'billing/billing.repository.ts': of<typeof billing>({
    lockPlanLimits: ['tn'],
    findAccount: ['tn'],
    findAccountByCustomer: ['cus'],
    lockAccount: ['tn', NOW],
    setCustomer: ['tn', 'cus', NOW],
    applySubscription: [
      'tn',
      { stripe_subscription_id: 'sub', plan: 'pro', status: 'active', seats: 3, current_period_start: NOW, current_period_end: NOW, cancel_at_period_end: false },
      NOW,
      NOW,
    ],
    upsertInvoice: [
      {
        id: 'in',
        tenant_id: 'tn',
        number: 'n',
        status: 'paid',
        amount: 4900,
        currency: 'eur',
        period_start: NOW,
        period_end: NOW,
        hosted_invoice_url: 'u',
        pdf_url: 'u',
        created_at: NOW,
        event_at: NOW,
      },
    ],
    listInvoices: [PAGE],
    recordStripeEvent: ['evt', 'invoice.paid'],
    countFullSeats: ['tn'],
    countConversationsSince: ['tn', NOW],
    countMessagesSince: ['tn', NOW],
  }),
  'auth/auth.repository.ts': of<typeof auth>({
    insertUser: [{ id: 'usr', email: 'e', name: 'n', password_hash: 'h' }],
    findUserByEmail: ['e'],
    findUser: ['usr'],
    updateUser: ['usr', { name: 'n', password_hash: 'h' }],
    findActiveMembership: ['tn', 'usr'],
    findFirstActiveTenantOfUser: ['usr'],
    activateMembership: ['tn', 'usr'],
    insertRefreshToken: [{ id: 'r', family_id: 'f', user_id: 'usr', tenant_id: 'tn', token_hash: BYTES, expires_at: NOW }],
    findRefreshTokenByHash: [BYTES],
    claimRefreshToken: ['r', NOW],
    revokeFamily: ['f', NOW],
    revokeUserFamilies: { cases: { 'every tenant': ['usr', NOW], 'one tenant': ['usr', NOW, 'tn'] } },
    findSession: ['tn', 'usr', 'f'],
    insertMailToken: [{ id: 'm', purpose: 'invitation', user_id: 'usr', tenant_id: 'tn', token_hash: BYTES, expires_at: NOW }],
    lockUsableMailToken: [BYTES, 'reset_password', NOW],
    markMailTokenUsed: ['m', NOW],
  }),
  'canned-responses/canned-response.repository.ts': of<typeof cannedResponse>({
    listCannedResponses: { cases: { all: [{}, PAGE], search: [{ q: 'q' }, PAGE] } },
    insertCannedResponse: [{ id: 'cr', tenant_id: 'tn', shortcut: 's', title: 't', content: 'c', created_by: 'usr', now: NOW }],
    updateCannedResponse: ['cr', { title: 't' }, NOW],
    deleteCannedResponse: ['cr'],
  }),
  'bots/bot.repository.ts': of<typeof bot>({
    insertBot: [
      {
        id: 'bot',
        tenant_id: 'tn',
        name: 'n',
        kind: 'faq',
        avatar_url: null,
        webhook_url: null,
        enabled: true,
        secret: 'whsec_x',
        handoff_department_id: null,
        settings: {},
        now: NOW,
      },
    ],
    tenantsWithBots: [],
    listBots: [PAGE],
    findBot: { cases: { read: ['bot'], lock: ['bot', { lock: true }] } },
    updateBot: ['bot', { name: 'n', enabled: false, settings: {} }, NOW],
    deleteBot: ['bot', NOW],
    departmentExists: ['d'],
    conversationsHeldByBots: [['conv', 'conv2']],
    insertBotDeliveries: [[{ id: 'btd', tenant_id: 'tn', bot_id: 'bot', conversation_id: 'conv', event_id: 'evt', event_type: 'message.created', body: '{}' }]],
    claimDueBotDeliveries: [10, 'token', 15_000],
    recordBotSuccess: ['btd', 'token', 200],
  }),
  'contacts/contact.repository.ts': of<typeof contact>({
    listContacts: { cases: { first: [{}, { limit: 20 }], 'search, after a cursor': [{ q: 'q' }, { limit: 20, after: AFTER }] } },
    findContact: { cases: { read: ['ct'], lock: ['ct', { lock: true }] } },
    insertContact: [{ id: 'ct', tenant_id: 'tn', name: 'n', email: null, phone: null, company: null, custom_attributes: {}, now: NOW }],
    updateContact: ['ct', { name: 'n', custom_attributes: {} }, NOW],
    deleteContact: ['ct'],
    findOrCreateContactByEmail: { cases: { existing: ['tn', 'e@example.com', 'n', NOW], 'new': { args: ['tn', 'e@example.com', 'n', NOW], rows: [0, 1, 1] } } },
  }),
  'conversations/conversation.repository.ts': of<typeof conversation>({
    findConversation: ['conv', 'usr'],
    findConversations: [['conv'], 'usr'],
    findConversationAnswer: ['conv', 'usr'],
    lockConversation: ['conv'],
    insertConversation: [
      {
        id: 'conv',
        tenant_id: 'tn',
        status: 'open',
        priority: 'normal',
        subject: null,
        visitor_id: 'vis',
        contact_id: null,
        department_id: null,
        assigned_user_id: null,
        widget_id: 'wgt',
        bot_id: 'bot',
        bot_state: 'active',
        now: NOW,
      },
    ],
    updateConversation: {
      cases: {
        'a change': ['conv', { status: 'closed', closed_at: NOW }, NOW],
        'a message counted': ['conv', { last_message: 'hi', last_message_at: NOW, last_activity_at: NOW }, NOW, { countMessage: true }],
      },
    },
    listConversations: {
      cases: {
        'first page': ['usr', {}, PAGE],
        'first page with its exact total (counted filters)': ['usr', { status: 'open', assignedUserId: null }, PAGE, { status: 'open', assignedUserId: null }],
        'every filter, after a cursor': [
          'usr',
          { status: 'open', assignedUserId: null, departmentId: 'd', priority: 'high', visitorId: 'vis', contactId: 'ct', q: 'q' },
          { limit: 20, offset: 0, after: AFTER },
        ],
      },
    },
    countConversations: [{ priority: 'high', q: 'q' }],
    countFromCounters: {
      cases: {
        'no filter': [{}],
        'every counted filter, unassigned': [{ status: 'open', assignedUserId: null, departmentId: 'd' }],
      },
    },
    departmentExists: ['d'],
    departmentCandidates: ['d'],
    teamCandidates: ['tn'],
    markAssigned: ['usr', NOW],
    releaseConversationsOf: ['usr', NOW],
    insertSurvey: [{ id: 'srv', tenant_id: 'tn', conversation_id: 'conv', created_at: NOW }],
    findConversationVisitor: ['conv'],
    findVisitorConversation: ['conv', 'vis'],
    listVisitorConversations: ['vis', 100],
    lockLatestSurvey: ['conv'],
    recordSurveyAnswer: ['srv', { rating: 5, comment: null, answeredAt: NOW }],
  }),
  'departments/department.repository.ts': of<typeof department>({
    listDepartments: [PAGE],
    findDepartment: { cases: { read: ['d'], lock: ['d', { lock: true }] } },
    insertDepartment: [{ id: 'd', tenant_id: 'tn', name: 'n' }],
    updateDepartment: ['d', { name: 'n' }],
    deleteDepartment: ['d'],
    memberIdsOf: [['d']],
    addDepartmentMembers: ['tn', 'd', ['usr']],
    removeDepartmentMember: ['d', 'usr'],
    activeMemberIds: [['usr']],
  }),
  'routing/routing.repository.ts': of<typeof routing>({
    candidates: { cases: { tenant: [null], 'department, online only': ['d', { userIds: ['usr'] }] } },
    routingInUse: ['tn'],
    tenantRouting: { cases: { read: ['tn'], lock: ['tn', { lock: true }] } },
    departmentRouting: { cases: { read: ['d'], lock: ['d', { lock: true }] } },
    setTenantRouting: ['tn', { round_robin_last_user_id: 'usr' }],
    setDepartmentRouting: ['d', { round_robin_last_user_id: 'usr' }],
    setCapacity: ['usr', 5],
    lockQueued: { cases: { head: [50], 'after a row': [50, { created_at: NOW, id: 'conv' }] } },
    assignMany: [[['conv', 'usr'], ['conv2', 'usr2']], NOW],
    tenantsWithQueue: [1000],
    lockQueuedIds: [['conv', 'conv2']],
    queueFigures: ['conv'],
    expiredAssignments: [100],
    lockExpired: ['conv'],
    returnToQueue: ['conv', 'usr', NOW],
  }),
  'hours/hours.repository.ts': of<typeof hours>({
    tenantHours: ['tn'],
    setTenantHours: ['tn', { time_zone: 'UTC', weekly: {}, overrides: [] }],
    departmentHours: ['d'],
    setDepartmentHours: ['d', null],
  }),
  'events/event.repository.ts': of<typeof event>({
    insertEvent: {
      cases: {
        'about a conversation': [{ id: 'evt', tenant_id: 'tn', type: 'message.created', data: {}, conversation_id: 'conv', internal: false, recipients: [], created_at: NOW }],
        'about nothing in particular': [{ id: 'evt', tenant_id: 'tn', type: 'csat.submitted', data: {}, conversation_id: null, internal: true, recipients: ['usr'], created_at: NOW }],
      },
    },
    insertEventAsFeedRow: {
      cases: {
        'one transaction at a time (PGlite)': [{ id: 'evt', tenant_id: 'tn', type: 'message.created', data: {}, conversation_id: 'conv', internal: false, recipients: [], created_at: NOW }],
        'PostgreSQL: and whether its place is final': [
          { id: 'evt', tenant_id: 'tn', type: 'message.created', data: {}, conversation_id: 'conv', internal: false, recipients: [], created_at: NOW },
          { concurrent: true },
        ],
      },
    },
  }),
  'events/feed-cursor.repository.ts': of<typeof feedCursor>({
    ensureCursor: ['webhooks', { txid: '1', position: 1 }],
    lockCursor: ['webhooks'],
    advanceCursor: ['webhooks', { txid: '2', position: 2 }],
  }),
  'events/queue.repository.ts': of<typeof queue>({
    claimDueRows: { skip: 'the statements of claimDueBotDeliveries and claimDueRuns, which call it' },
    recordFailedAttempt: {
      cases: {
        'a bot delivery, to retry': ['bot_deliveries', 'btd', 'token', { statusCode: 500, error: 'e', retryInMs: 5_000 }],
        'a webhook delivery, for good': ['webhook_deliveries', 'whd', 'token', { statusCode: null, error: 'e', retryInMs: undefined }],
      },
    },
    queueStats: { cases: { 'bot deliveries': ['bot_deliveries'], 'workflow runs': ['workflow_runs'] } },
  }),
  'events/feed.repository.ts': of<typeof feed>({
    tenantLockKey: { skip: 'a fragment of the statements below' },
    aloneBelow: { skip: 'a fragment of event.insertEventAsFeedRow' },
    readFeed: {
      cases: {
        'one tenant, up to the horizon': [{ tenantId: 'tn', after: { txid: '1', position: 1 }, limit: 100 }],
        'every tenant, up to a position read before': [{ after: { txid: '1', position: 1 }, upTo: { txid: '2', position: 2 }, limit: 100 }],
      },
    },
    feedHead: ['tn'],
    positionOfEvent: ['evt'],
    compareFeedPositions: { skip: 'compares positions in memory' },
  }),
  'files/file.repository.ts': of<typeof file>({
    insertFile: [{ id: 'file', tenant_id: 'tn', conversation_id: null, name: 'n', content_type: 'text/plain', size: 1, sha256: BYTES, storage_key: 'k', uploaded_by_type: 'user', uploaded_by_id: 'usr' }],
    findFile: ['file'],
    lockFiles: [['file', 'file2']],
    findFiles: [['file', 'file2']],
    markAttached: [['file'], 'conv', NOW],
    findUploadConversation: ['conv'],
    deleteFile: ['file'],
    visitorMaySee: { cases: { 'attached to their conversation': [{ ...{ id: 'file', tenant_id: 'tn', conversation_id: 'conv', name: 'n', content_type: 'text/plain', size: 1, sha256: BYTES, storage_key: 'k', uploaded_by_type: 'visitor' as const, uploaded_by_id: 'vis', attached_at: null, created_at: NOW }, uploaded_by_id: 'someone else' }, 'vis'] } },
    storageBytes: ['tn'],
    lockOrphans: [DAY, 100],
    deleteFiles: [['file']],
  }),
  'jobs/scheduler.repository.ts': of<typeof scheduler>({
    ensureJobs: [['job']],
    claimDueJobs: [['job'], 'token', 60_000],
    finishJob: ['job', 'token', 60_000, null],
    findJob: ['job'],
  }),
  'conversations/message.repository.ts': of<typeof message>({
    insertMessage: {
      cases: {
        'counted for its sender': [
          { id: 'msg', tenant_id: 'tn', conversation_id: 'conv', sender_type: 'user', sender_id: 'usr', type: 'text', content: 'c', internal: false, attachments: [], created_at: NOW, sender_name: null, sender_avatar_url: null },
          { countForSender: true },
        ],
        'a system message': [
          { id: 'msg', tenant_id: 'tn', conversation_id: 'conv', sender_type: 'system', sender_id: null, type: 'system', content: 'c', internal: false, attachments: [], created_at: NOW, sender_name: null, sender_avatar_url: null },
        ],
      },
    },
    listMessages: {
      cases: {
        'newest page': ['conv', { limit: 20 }],
        "the visitor's view, before a cursor": ['conv', { limit: 20, before: AFTER }, { publicOnly: true }],
      },
    },
    upsertReadMark: [{ tenant_id: 'tn', conversation_id: 'conv', reader_id: 'usr', last_read_at: NOW }],
    claimIdempotencyKey: {
      cases: {
        'the key is ours': [{ tenant_id: 'tn', caller_id: 'usr', key: 'k', request_hash: BYTES }, DAY],
        'another request holds it': { args: [{ tenant_id: 'tn', caller_id: 'usr', key: 'k', request_hash: BYTES }, DAY], rows: [0] },
      },
    },
    storeIdempotentResponse: [{ tenant_id: 'tn', caller_id: 'usr', key: 'k' }, { status: 201, body: {} }],
  }),
  'retention/retention.repository.ts': of<typeof retention>({
    deleteOldIdempotencyKeys: [DAY, 1000],
    deleteDeadRefreshTokens: [DAY, 1000],
    deleteDeadMailTokens: [DAY, 1000],
    deleteOldPageViews: [DAY, 1000],
    deleteOldEvents: [DAY, 1000],
    deleteOldWebhookDeliveries: [DAY, 1000],
    deleteOldBotDeliveries: [DAY, 1000],
    deleteOldWorkflowRuns: [DAY, 1000],
  }),
  'tenants/tenant.repository.ts': of<typeof tenant>({
    insertTenant: [{ id: 'tn', name: 'n', settings: '{}' }],
    findTenant: ['tn'],
    insertMembership: [{ tenant_id: 'tn', user_id: 'usr', role: 'owner' }],
    listMembers: [PAGE],
    lockTenant: ['tn'],
    updateTenant: ['tn', { name: 'n', settings: {} }],
    findMember: ['usr'],
    lockOwnersAndMember: ['usr'],
    updateMembership: ['usr', { role: 'admin' }],
    deleteMembership: ['usr'],
    findMembershipAnyStatus: ['tn', 'usr'],
  }),
  'team/team.repository.ts': of<typeof team>({
    listActiveMembers: [],
    listDepartmentMemberships: [],
    countOpenConversationsByAssignee: [],
  }),
  'visitors/visitor.repository.ts': of<typeof visitor>({
    touchVisitors: [['vis'], NOW],
    visitorExists: ['vis'],
    listVisitorsSeenSince: { cases: { all: [NOW, {}, PAGE], 'one widget': [NOW, { widgetId: 'wgt' }, PAGE] } },
    findVisitor: ['vis'],
    recentPagesOf: ['vis', 20],
    conversationsOfVisitor: ['vis', 50],
    findVisitorIdentity: ['vis'],
    insertVisitor: [{ id: 'vis', tenant_id: 'tn', widget_id: 'wgt', contact_id: null, email: null, name: null, now: NOW }],
    updateVisitorSession: {
      cases: {
        anonymous: ['vis', { widget_id: 'wgt', now: NOW }],
        identified: ['vis', { widget_id: 'wgt', now: NOW, identity: { contact_id: 'ct', email: 'e@example.com', name: 'n' } }],
      },
    },
    insertPageView: ['tn', 'vis', { url: 'https://example.com/', title: 't', referrer: 'r' }, NOW],
  }),
  'webhooks/webhook.repository.ts': of<typeof webhook>({
    insertWebhook: [{ id: 'whk', tenant_id: 'tn', url: 'https://example.com/hook', events: ['*'], description: 'd', secret: 'whsec_x', now: NOW }],
    listWebhooks: [PAGE],
    findWebhook: { cases: { read: ['whk'], lock: ['whk', { lock: true }] } },
    updateWebhook: ['whk', { url: 'https://example.com/hook', enabled: false, disabled_reason: 'manual', disabled_at: NOW }, NOW],
    deleteWebhook: ['whk'],
    listDeliveries: { cases: { all: ['whk', {}, PAGE], 'by status': ['whk', { status: 'failed' }, PAGE] } },
    requeueDelivery: ['whk', 'whd'],
    tenantsWithEnabledWebhooks: [],
    enabledWebhooksOf: [['tn', 'tn2']],
    insertDeliveries: [[{ id: 'whd', tenant_id: 'tn', webhook_id: 'whk', event_id: 'evt', event_type: 'message.created', body: '{}' }]],
    claimDueDeliveries: { cases: { 'any endpoint': [10, 'token', 15_000], 'but slow ones at their cap': [10, 'token', 15_000, ['whk', 'whk2']] } },
    recordSuccesses: [[{ id: 'whd', lockToken: 'token', statusCode: 200 }, { id: 'whd2', lockToken: 'token', statusCode: 204 }]],
    releaseClaims: [[{ id: 'whd', lockToken: 'token' }, { id: 'whd2', lockToken: 'token' }]],
    clearFailingStreak: ['whk'],
    clearFailingStreaks: [['whk', 'whk2']],
    noteFailure: ['whk', 5 * DAY],
    disableWebhook: ['whk', 'gone'],
    activeOwnerEmails: ['tn'],
    queueStats: [],
  }),
  'workflows/workflow.repository.ts': of<typeof workflow>({
    insertWorkflow: [
      { id: 'wf', tenant_id: 'tn', name: 'n', enabled: true, trigger_type: 'conversation.closed', trigger: { type: 'conversation.closed' }, conditions: [], actions: [{ type: 'close' }], secret: 'whsec_x', now: NOW },
    ],
    tenantsWithEnabledWorkflows: [],
    listWorkflows: [PAGE],
    findWorkflow: ['wf'],
    updateWorkflow: ['wf', { enabled: false, trigger: { type: 'conversation.created' }, trigger_type: 'conversation.created', actions: [{ type: 'close' }] }, NOW],
    rotateWorkflowSecret: ['wf', 'whsec_new', NOW, NOW],
    deleteWorkflow: ['wf'],
    listRuns: { cases: { first: ['wf', {}, { limit: 20 }], 'by status, next page': ['wf', { status: 'failed' }, { limit: 20, before: AFTER }] } },
    idleConversations: ['tn', 10, NOW, 500],
    markIdle: [{ tenant_id: 'tn', conversation_id: 'conv', minutes: 10, fired_for: NOW }],
    idleTriggers: [],
    enabledWorkflowsOf: [['tn', 'tn2'], ['conversation.closed', 'message.created']],
    insertRuns: {
      cases: {
        'to run': [[{ id: 'wfr', tenant_id: 'tn', workflow_id: 'wf', event_id: 'evt', event_type: 'conversation.closed', event_body: '{}', conversation_id: 'conv', depth: 1, actions: [] }]],
        'too deep': [[{ id: 'wfr', tenant_id: 'tn', workflow_id: 'wf', event_id: 'evt', event_type: 'message.created', event_body: '{}', conversation_id: 'conv', depth: 4, actions: [], skip_reason: 'depth' }]],
      },
    },
    claimDueRuns: [10, 'token', 60_000],
    recordRun: {
      cases: {
        'next action': ['wfr', 'token', { actions: [], status: 'pending', retry_step: 0, keepLease: true }],
        retry: ['wfr', 'token', { actions: [], status: 'pending', retryInMs: 5_000, retry_step: 1 }],
        finished: ['wfr', 'token', { actions: [], status: 'succeeded' }],
        skipped: ['wfr', 'token', { actions: [], status: 'skipped', skip_reason: 'conditions' }],
      },
    },
  }),
  'widgets/widget.repository.ts': of<typeof widget>({
    listWidgets: [PAGE],
    findWidget: { cases: { read: ['wgt'], lock: ['wgt', { lock: true }] } },
    insertWidget: [{ id: 'wgt', tenant_id: 'tn', name: 'n', settings: {}, identity_secret: 's', identity_required: false, now: NOW }],
    updateWidget: ['wgt', { name: 'n', settings: {} }, NOW],
    deleteWidget: ['wgt'],
    listDomains: ['wgt', PAGE],
    insertDomain: [{ id: 'dom', tenant_id: 'tn', widget_id: 'wgt', domain: 'example.com' }],
    deleteDomain: ['dom'],
    findWidgetWithDomains: ['wgt'],
    anyWidgetAllowsHost: ['www.example.com'],
  }),
  'labels/label.repository.ts': of<typeof label>({
    listLabels: [PAGE],
    holdTenant: ['tn'],
    countLabels: [],
    findLabel: ['lbl'],
    insertLabel: [{ id: 'lbl', tenant_id: 'tn', name: 'n', color: '#000000', description: null, now: NOW }],
    updateLabel: ['lbl', { color: '#ffffff' }, NOW],
    deleteLabel: ['lbl'],
    lockConversationForLabels: ['conv'],
    addConversationLabel: [{ tenant_id: 'tn', conversation_id: 'conv', label_id: 'lbl', now: NOW }],
    removeConversationLabel: ['conv', 'lbl'],
  }),
  'snooze/snooze.repository.ts': of<typeof snooze>({
    lockConversation: ['conv'],
    setSnooze: ['conv', { until: NOW, untilReply: true }, NOW],
    clearSnooze: ['conv', NOW],
    dueSnoozes: [NOW, 100],
    clearDueSnooze: ['conv', NOW],
  }),
  'search/search.repository.ts': of<typeof search>({
    searchConversations: {
      cases: {
        member: [{ tsquery: "'order':*", pattern: '%order%', partsPattern: '%order%', text: 'order', publicOnly: false, limit: 20, offset: 0 }],
        'bot, filtered': [{ tsquery: "'order':*", pattern: '%order%', partsPattern: null, text: 'order', status: 'open', labelId: 'lbl', publicOnly: true, botId: 'bot', limit: 20, offset: 0 }],
      },
    },
  }),
  'reports/facts.repository.ts': of<typeof facts>({
    recordClose: [{ tenantId: 'tn', conversationId: 'conv', at: NOW, survey: true }],
    recordReopen: [{ tenantId: 'tn', conversationId: 'conv', at: NOW }],
    lockFactsContext: ['conv'],
    writeFacts: {
      cases: {
        facts: ['conv', [{ tenant_id: 'tn', conversation_id: 'conv', kind: 'response', at: NOW, department_id: null, agent_id: 'usr', seconds: 1, bh_seconds: 0.5 }], { awaiting_since: null }],
        'state only': ['conv', [], { awaiting_since: null }],
      },
    },
  }),
  'reports/report.repository.ts': of<typeof report>({
    factTotals: {
      cases: {
        summary: [{ tenantId: 'tn', start: NOW, end: NOW }],
        'series, filtered': [{ tenantId: 'tn', start: NOW, end: NOW, departmentId: 'd', agentId: 'usr', labelId: 'lbl' }, { unit: 'day', timeZone: 'UTC' }],
      },
    },
    factGrid: { cases: { 'per hour': [{ tenantId: 'tn', start: NOW, end: NOW }, { unit: 'hour', timeZone: 'UTC' }] } },
    rollupTotals: { cases: { summary: [{ tenantId: 'tn', firstDay: '2026-01-01', lastDay: '2026-01-30', dimension: 'tenant', key: '' }, false] } },
    rollupDailyPercentiles: [{ tenantId: 'tn', firstDay: '2026-01-01', lastDay: '2026-01-30', dimension: 'tenant', key: '' }],
    lockRollupsShared: ['tn'],
    cacheBlocks: [
      { tenantId: 'tn', dimension: 'label', key: 'lbl' },
      [
        { block: { first: '2026-01-04', last: '2026-01-07' }, from: { blocks: [], days: [{ first: '2026-01-04', last: '2026-01-07' }] } },
        { block: { first: '2026-01-08', last: '2026-01-15' }, from: { blocks: [{ first: '2026-01-08', last: '2026-01-11' }], days: [{ first: '2026-01-12', last: '2026-01-15' }] } },
      ],
    ],
    cachedBlocksWithin: [{ tenantId: 'tn', dimension: 'label', key: 'lbl' }, { first: '2026-01-04', last: '2026-01-15' }],
    blockGrid: {
      cases: {
        'blocks and days': [{ tenantId: 'tn', dimension: 'tenant', key: '' }, { blocks: [{ first: '2026-01-04', last: '2026-01-07' }], days: [{ first: '2026-01-01', last: '2026-01-03' }] }],
        'days only': [{ tenantId: 'tn', dimension: 'tenant', key: '' }, { blocks: [], days: [{ first: '2026-01-01', last: '2026-01-03' }] }],
      },
    },
    cachedDailyPercentiles: [{ tenantId: 'tn', firstDay: '2026-01-01', lastDay: '2026-01-30', dimension: 'tenant', key: '' }],
    cacheDailyPercentiles: { args: [{ tenantId: 'tn', dimension: 'tenant', key: '' }, ['2026-01-01', '2026-01-02']], rows: [1, 1] },
    tenantTimeZone: ['tn'],
    foldPendingFacts: ['tn'],
    tenantsWithPendingFacts: [100],
  }),
};
