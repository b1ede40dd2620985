// Row types of the database, kept by hand beside the migrations (src/db/migrations). A column added
// there is added here in the same commit: `npm run db:types` (part of `npm run check`) migrates a fresh
// database and fails on any table, column, nullability, type or `IN (...)` value that differs.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<Record<string, unknown>, string | Record<string, unknown> | undefined, string | Record<string, unknown>>;

export interface TenantsTable {
  id: string;
  name: string;
  timezone: Generated<string>;
  settings: Json;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  /** The contract's BusinessHours; null is always open. */
  business_hours: BusinessHoursJson | null;
  routing: Generated<RoutingMode>;
  round_robin_last_user_id: string | null;
}

export type RoutingMode = 'manual' | 'round_robin' | 'least_loaded';
type HoursPeriod = [string, string];
/** Business hours as stored (the contract's BusinessHours, checked by src/hours/schedule.ts before it is). */
export interface StoredHours {
  time_zone: string;
  weekly: Partial<Record<'sun' | 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat', HoursPeriod[]>>;
  overrides: { date: string; closed?: boolean; periods?: HoursPeriod[] }[];
}
/** Written as JSON text: the pg driver would send a top-level array as a PostgreSQL array. */
type BusinessHoursJson = ColumnType<StoredHours, string | null, string | null>;

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  email_verified_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface MembershipsTable {
  tenant_id: string;
  user_id: string;
  role: 'owner' | 'admin' | 'agent';
  seat: Generated<'full' | 'lite'>;
  status: Generated<'active' | 'invited'>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  last_assigned_at: Date | null;
  /** Open conversations routing gives the member at most; null is no limit. */
  capacity: Generated<number | null>;
}

export interface RefreshTokensTable {
  id: string;
  family_id: string;
  user_id: string;
  tenant_id: string;
  token_hash: Uint8Array;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
  created_at: CreatedAt;
}

export interface DB {
  tenants: TenantsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  refresh_tokens: RefreshTokensTable;
  departments: DepartmentsTable;
  department_members: DepartmentMembersTable;
  api_keys: ApiKeysTable;
  mail_tokens: MailTokensTable;
  contacts: ContactsTable;
  visitors: VisitorsTable;
  conversations: ConversationsTable;
  conversation_counts: ConversationCountsTable;
  messages: MessagesTable;
  read_marks: ReadMarksTable;
  surveys: SurveysTable;
  canned_responses: CannedResponsesTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  widgets: WidgetsTable;
  widget_domains: WidgetDomainsTable;
  page_views: PageViewsTable;
  scheduled_jobs: ScheduledJobsTable;
  files: FilesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  feed_cursors: FeedCursorsTable;
  bots: BotsTable;
  bot_deliveries: BotDeliveriesTable;
  billing_accounts: BillingAccountsTable;
  billing_invoices: BillingInvoicesTable;
  stripe_events: StripeEventsTable;
  workflows: WorkflowsTable;
  workflow_runs: WorkflowRunsTable;
  conversation_idle_marks: ConversationIdleMarksTable;
  labels: LabelsTable;
  conversation_labels: ConversationLabelsTable;
  report_facts: ReportFactsTable;
  report_facts_pending: ReportFactsPendingTable;
  conversation_facts: ConversationFactsTable;
  report_daily: ReportDailyTable;
  report_daily_grid: ReportDailyGridTable;
  report_day_ranks: ReportDayRanksTable;
  report_blocks: ReportBlocksTable;
  report_block_grid: ReportBlockGridTable;
}

export type Tenant = Selectable<TenantsTable>;
export type NewTenant = Insertable<TenantsTable>;
export type TenantUpdate = Updateable<TenantsTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Membership = Selectable<MembershipsTable>;
export type NewMembership = Insertable<MembershipsTable>;
export type NewRefreshToken = Insertable<RefreshTokensTable>;

export interface DepartmentsTable {
  id: string;
  tenant_id: string;
  name: string;
  description: Generated<string>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  /** Its own hours; null uses the tenant's. */
  business_hours: BusinessHoursJson | null;
  /** null follows the tenant's routing. */
  routing: RoutingMode | null;
  round_robin_last_user_id: string | null;
  return_after_minutes: number | null;
}

export interface DepartmentMembersTable {
  tenant_id: string;
  department_id: string;
  user_id: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  name: string;
  scopes: string[];
  prefix: string;
  key_hash: Uint8Array;
  created_by: string | null;
  created_at: CreatedAt;
  rotated_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  /** A bot's own key (scope 'bot'); null for an integration's key. */
  bot_id: string | null;
}

export type MailTokenPurpose = 'verify_email' | 'reset_password' | 'invitation';

export interface MailTokensTable {
  id: string;
  purpose: MailTokenPurpose;
  user_id: string;
  tenant_id: string | null;
  token_hash: Uint8Array;
  expires_at: Date;
  used_at: Date | null;
  created_at: CreatedAt;
}

export type Department = Selectable<DepartmentsTable>;
export type ApiKey = Selectable<ApiKeysTable>;

export type ConversationStatus = 'open' | 'assigned' | 'closed';
export type Priority = 'low' | 'normal' | 'high' | 'urgent';
export type BotState = 'active' | 'handed_off' | 'off';

export interface ContactsTable {
  id: string;
  tenant_id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  custom_attributes: Json;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface VisitorsTable {
  id: string;
  tenant_id: string;
  name: string | null;
  email: string | null;
  contact_id: string | null;
  widget_id: string | null;
  metadata: Json;
  created_at: CreatedAt;
  last_seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ConversationsTable {
  id: string;
  tenant_id: string;
  status: Generated<ConversationStatus>;
  priority: Generated<Priority>;
  subject: string | null;
  visitor_id: string | null;
  contact_id: string | null;
  widget_id: string | null;
  department_id: string | null;
  assigned_user_id: string | null;
  bot_state: Generated<BotState>;
  last_message: string | null;
  last_message_at: Date | null;
  last_activity_at: ColumnType<Date, Date | string | undefined, Date | string>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  closed_at: Date | null;
  /** Messages that count as unread for someone: all but system notices. */
  message_count: Generated<number>;
  /** The bot the conversation was given; bot_state says whether it still holds it. */
  bot_id: string | null;
  /** conversation.idle counts from here (or created_at when the visitor never wrote). */
  last_visitor_message_at: Date | null;
  /** When the current assignee got it (a trigger keeps it); the return timer counts from here at the earliest. */
  assigned_at: ColumnType<Date | null, never, never>;
  /** The member the return timer took it from: routing gives it to someone else. */
  returned_from_user_id: string | null;
  /** Snoozed until then (null: not snoozed by time); the wake-up job brings it back. */
  snoozed_until: Date | null;
  /** Snoozed until the visitor writes again. */
  snooze_until_reply: Generated<boolean>;
}

/**
 * Conversations per combination of the everyday list filters, kept by a trigger on conversations
 * (migration conversation-counts); '' is "none". Summed over the shards (and the keys a filter leaves
 * open) at read.
 */
export interface ConversationCountsTable {
  tenant_id: string;
  status: ConversationStatus;
  assignee_key: string;
  department_key: string;
  shard: number;
  n: number;
}

export type MessageSenderType = 'visitor' | 'user' | 'bot' | 'system';
export type MessageType = 'text' | 'note' | 'system' | 'survey';

export interface MessagesTable {
  id: string;
  tenant_id: string;
  conversation_id: string;
  sender_type: MessageSenderType;
  sender_id: string | null;
  type: MessageType;
  content: string;
  internal: Generated<boolean>;
  attachments: ColumnType<string[], string | undefined, string>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  /** A bot's name and avatar when it wrote the message (what the visitor is shown). */
  sender_name: string | null;
  sender_avatar_url: string | null;
}

export interface ReadMarksTable {
  tenant_id: string;
  conversation_id: string;
  reader_id: string;
  /** null: the reader wrote here but never marked it read. */
  last_read_at: Date | null;
  /** message_count when they last read. */
  seen_count: Generated<number>;
  /** Their own messages since. */
  own_since: Generated<number>;
}

export interface SurveysTable {
  id: string;
  tenant_id: string;
  conversation_id: string;
  status: Generated<'pending' | 'answered' | 'expired'>;
  rating: number | null;
  comment: string | null;
  created_at: CreatedAt;
  answered_at: Date | null;
}

export interface CannedResponsesTable {
  id: string;
  tenant_id: string;
  shortcut: string;
  title: string;
  content: string;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface IdempotencyKeysTable {
  tenant_id: string;
  caller_id: string;
  key: string;
  request_hash: Uint8Array;
  response_status: number;
  response_body: ColumnType<unknown, string, string>;
  // Updated when a key past its retention is taken over afresh.
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface EventsTable {
  position: Generated<number>;
  id: string;
  tenant_id: string;
  type: string;
  data: ColumnType<Record<string, unknown>, string, never>;
  conversation_id: string | null;
  internal: Generated<boolean>;
  recipients: Generated<string[]>;
  visitor_id: string | null;
  txid: Generated<string>;
  created_at: CreatedAt;
  /** How many workflow runs led to this event's change (src/workflows/). */
  workflow_depth: Generated<number>;
}

export type Conversation = Selectable<ConversationsTable>;
export type Message = Selectable<MessagesTable>;
export type Contact = Selectable<ContactsTable>;
export type Visitor = Selectable<VisitorsTable>;
export type CannedResponse = Selectable<CannedResponsesTable>;

export interface WidgetsTable {
  id: string;
  tenant_id: string;
  name: string;
  settings: Json;
  identity_secret: string;
  identity_required: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WidgetDomainsTable {
  id: string;
  tenant_id: string;
  widget_id: string;
  domain: string;
  created_at: CreatedAt;
}

export interface PageViewsTable {
  id: Generated<number>;
  tenant_id: string;
  visitor_id: string;
  url: string;
  title: string | null;
  referrer: string | null;
  viewed_at: ColumnType<Date, Date | string | undefined, never>;
}

export type Widget = Selectable<WidgetsTable>;
export type WidgetDomain = Selectable<WidgetDomainsTable>;

/** One periodic job shared by every instance (src/jobs/scheduler.ts). */
export interface ScheduledJobsTable {
  name: string;
  next_run_at: ColumnType<Date, Date | string, Date | string>;
  locked_until: Date | null;
  lock_token: string | null;
  last_started_at: Date | null;
  last_finished_at: Date | null;
  last_error: string | null;
  created_at: CreatedAt;
}

export type FileUploaderType = 'user' | 'api_key' | 'visitor';

/** An uploaded file; its bytes are in storage under storage_key (src/files/storage.ts). */
export interface FilesTable {
  id: string;
  tenant_id: string;
  conversation_id: string | null;
  name: string;
  content_type: string;
  size: number;
  sha256: Uint8Array;
  storage_key: string;
  uploaded_by_type: FileUploaderType;
  uploaded_by_id: string;
  attached_at: Date | null;
  created_at: CreatedAt;
}

export type FileRow = Selectable<FilesTable>;
export interface WebhooksTable {
  id: string;
  tenant_id: string;
  url: string;
  events: string[];
  description: Generated<string>;
  enabled: Generated<boolean>;
  disabled_reason: 'manual' | 'gone' | 'failing' | null;
  disabled_at: Date | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type Webhook = Selectable<WebhooksTable>;

export interface WebhookDeliveriesTable {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: Generated<'pending' | 'succeeded' | 'failed'>;
  attempts: Generated<number>;
  retry_step: Generated<number>;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  locked_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lock_token: string | null;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: CreatedAt;
  delivered_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;

export interface FeedCursorsTable {
  name: string;
  txid: string;
  position: number;
  updated_at: UpdatedAt;
}

export type BotKind = 'webhook' | 'faq' | 'llm';

export interface BotsTable {
  id: string;
  tenant_id: string;
  name: string;
  kind: BotKind;
  avatar_url: string | null;
  webhook_url: string | null;
  enabled: Generated<boolean>;
  secret: string;
  /** Signs beside `secret` until previous_secret_expires_at (a rotation's overlap). */
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  handoff_department_id: string | null;
  settings: Json;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type Bot = Selectable<BotsTable>;

export interface BotDeliveriesTable {
  id: string;
  tenant_id: string;
  bot_id: string;
  conversation_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: Generated<'pending' | 'succeeded' | 'failed'>;
  attempts: Generated<number>;
  retry_step: Generated<number>;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  locked_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lock_token: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: CreatedAt;
  delivered_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type SubscriptionStatus = 'incomplete' | 'incomplete_expired' | 'trialing' | 'active' | 'past_due' | 'canceled' | 'unpaid' | 'paused';

/** A tenant's Stripe customer and the mirror of its subscription (src/billing/). */
export interface BillingAccountsTable {
  tenant_id: string;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  plan: string | null;
  status: SubscriptionStatus | null;
  seats: number | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: Generated<boolean>;
  subscription_event_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type InvoiceStatus = 'draft' | 'open' | 'paid' | 'uncollectible' | 'void';

export interface BillingInvoicesTable {
  id: string;
  tenant_id: string;
  number: string | null;
  status: InvoiceStatus;
  amount: number;
  currency: string;
  period_start: Date | null;
  period_end: Date | null;
  hosted_invoice_url: string | null;
  pdf_url: string | null;
  created_at: Date;
  event_at: Date;
}

export interface StripeEventsTable {
  id: string;
  type: string;
  received_at: CreatedAt;
}

export type BillingAccount = Selectable<BillingAccountsTable>;
export type BillingInvoice = Selectable<BillingInvoicesTable>;

/** Workflows (src/workflows/): trigger, conditions and actions as the contract has them, kept as JSON. */
export interface WorkflowsTable {
  id: string;
  tenant_id: string;
  name: string;
  enabled: Generated<boolean>;
  trigger_type: 'conversation.created' | 'conversation.closed' | 'message.created' | 'conversation.idle';
  trigger: ColumnType<Record<string, unknown>, string, string>;
  conditions: ColumnType<Record<string, unknown>[], string | undefined, string>;
  actions: ColumnType<Record<string, unknown>[], string, string>;
  secret: string;
  /** Signs beside `secret` until previous_secret_expires_at (a rotation's overlap). */
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type Workflow = Selectable<WorkflowsTable>;

export type WorkflowRunStatus = 'pending' | 'succeeded' | 'failed' | 'skipped';
export type WorkflowSkipReason = 'depth' | 'conditions' | 'disabled';

export interface WorkflowRunsTable {
  id: string;
  tenant_id: string;
  workflow_id: string;
  event_id: string;
  event_type: string;
  event_body: string;
  conversation_id: string | null;
  depth: number;
  status: Generated<WorkflowRunStatus>;
  skip_reason: WorkflowSkipReason | null;
  actions: ColumnType<Record<string, unknown>[], string | undefined, string>;
  attempts: Generated<number>;
  retry_step: Generated<number>;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  locked_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lock_token: string | null;
  created_at: CreatedAt;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type WorkflowRun = Selectable<WorkflowRunsTable>;

export interface ConversationIdleMarksTable {
  tenant_id: string;
  conversation_id: string;
  minutes: number;
  fired_for: Date;
}

export interface LabelsTable {
  id: string;
  tenant_id: string;
  name: string;
  color: string;
  description: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}
export type Label = Selectable<LabelsTable>;

export interface ConversationLabelsTable {
  tenant_id: string;
  conversation_id: string;
  label_id: string;
  created_at: CreatedAt;
}

export type ReportFactKind = 'conversation' | 'first_response' | 'response' | 'resolution' | 'reopen' | 'handoff' | 'queue_wait' | 'survey' | 'csat';

/** One fact reports count (src/reports/facts.ts); a trigger puts it in report_facts_pending until it is folded into report_daily. */
export interface ReportFactsTable {
  id: Generated<number>;
  tenant_id: string;
  conversation_id: string;
  kind: ReportFactKind;
  at: Date;
  department_id: string | null;
  agent_id: string | null;
  seconds: number | null;
  bh_seconds: number | null;
  value: number | null;
}

/** A fact not yet folded into its rollups (migration 2026-12-02T09-00-00; src/reports/fold.job.ts). */
export interface ReportFactsPendingTable {
  fact_id: number;
  tenant_id: string;
  conversation_id: string;
}

/** What the next facts of a conversation need (started by a trigger on conversations). */
export interface ConversationFactsTable {
  conversation_id: string;
  tenant_id: string;
  created_at: Date;
  opened_at: Date;
  queued_since: Date | null;
  first_assigned_at: Date | null;
  queue_wait_recorded: Generated<boolean>;
  awaiting_since: Date | null;
  first_visitor_at: Date | null;
  first_response_at: Date | null;
  reopen_count: Generated<number>;
  closed_at: Date | null;
}

/** Facts summed per day of the tenant's zone, per tenant (key ''), department and agent. */
export interface ReportDailyTable {
  tenant_id: string;
  kind: string;
  dimension: string;
  key: string;
  /** Read it as text (day::text): a Date would be midnight in the process's zone. */
  day: ColumnType<Date, string, string>;
  n: ColumnType<number, number, number>;
  seconds_sum: number;
  bh_n: ColumnType<number, number, number>;
  bh_seconds_sum: number;
  value_sum: ColumnType<number, number, number>;
  /** Whole milliseconds, so that sums do not depend on the order facts were added in. */
  ms_sum: Generated<number>;
  bh_ms_sum: Generated<number>;
  /** Ratings of 4 or 5 (csat). */
  satisfied: Generated<number>;
}

/** Per day, how many durations of a kind fell on each value of the grid (report_grid(): src/reports/grid.ts). */
export interface ReportDailyGridTable {
  tenant_id: string;
  kind: string;
  dimension: string;
  key: string;
  day: ColumnType<Date, string, string>;
  business: boolean;
  grid: number;
  n: number;
}

/** What a daily series reads of a past day, cached (migration 2026-12-03T09-00-00): the ranks of its median and p90. */
export interface ReportDayRanksTable {
  tenant_id: string;
  kind: string;
  dimension: string;
  key: string;
  day: ColumnType<Date, string, string>;
  total: number;
  median_lo: number | null;
  median_hi: number | null;
  p90_lo: number | null;
  p90_hi: number | null;
}

/** A block of past days whose grid counts are cached in report_block_grid (a row per kind and business). */
export interface ReportBlocksTable {
  tenant_id: string;
  dimension: string;
  key: string;
  first_day: ColumnType<Date, string, string>;
  last_day: ColumnType<Date, string, string>;
}

export interface ReportBlockGridTable {
  tenant_id: string;
  dimension: string;
  key: string;
  first_day: ColumnType<Date, string, string>;
  last_day: ColumnType<Date, string, string>;
  kind: string;
  business: boolean;
  /** The block's grid values, ascending, and how many durations fell on each. */
  grids: number[];
  counts: number[];
}
