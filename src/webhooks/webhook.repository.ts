import { sql } from 'kysely';
import { dbAgo, dbFromNow } from '../db/clock.ts';
import { inDueOrder } from '../db/due-order.ts';
import { idIn } from '../db/id-lookup.ts';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
import type { Webhook, WebhookDelivery } from '../db/schema.ts';

// ---- Endpoints (tenant work, row-level security) ----------------------------------------------------

export async function insertWebhook(
  trx: Tx,
  row: { id: string; tenant_id: string; url: string; events: string[]; description: string; secret: string; now: Date },
) {
  const { now, ...values } = row;
  return trx
    .insertInto('webhooks')
    .values({ ...values, created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listWebhooks(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id'), page);
}

export async function findWebhook(trx: Tx, id: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('webhooks').selectAll().where('id', '=', id);
  if (options.lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function updateWebhook(
  trx: Tx,
  id: string,
  changes: Partial<Pick<Webhook, 'url' | 'events' | 'description' | 'enabled' | 'disabled_reason' | 'disabled_at' | 'failing_since' | 'secret' | 'previous_secret' | 'previous_secret_expires_at'>>,
  now: Date,
) {
  return trx
    .updateTable('webhooks')
    .set({ ...changes, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteWebhook(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

const DELIVERY_COLUMNS = [
  'id',
  'webhook_id',
  'event_id',
  'event_type',
  'status',
  'attempts',
  'last_status_code',
  'last_error',
  'next_attempt_at',
  'created_at',
  'delivered_at',
] as const;

export async function listDeliveries(trx: Tx, webhookId: string, filter: { status?: string | undefined }, page: { limit: number; offset: number }) {
  let query = trx.selectFrom('webhook_deliveries').select(DELIVERY_COLUMNS).where('webhook_id', '=', webhookId);
  if (filter.status) query = query.where('status', '=', filter.status as 'pending');
  return offsetPage(query.orderBy('created_at', 'desc').orderBy('id', 'desc'), page);
}

/**
 * Queues a delivery again at once, with a fresh retry schedule. An attempt in flight keeps its lease, so
 * the new attempt starts only once that lease ends (a delivery is never sent twice at once), but loses
 * its token: its outcome is not recorded over the requeue.
 */
export async function requeueDelivery(trx: Tx, webhookId: string, id: string) {
  return trx
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', retry_step: 0, next_attempt_at: sql<Date>`now()`, lock_token: null })
    .where('id', '=', id)
    .where('webhook_id', '=', webhookId)
    .returning(DELIVERY_COLUMNS)
    .executeTakeFirst();
}

// ---- The dispatcher (system role, every tenant) ------------------------------------------------------

/** The tenants with an enabled endpoint (the dispatcher's TenantInterest; read as the system role). */
export async function tenantsWithEnabledWebhooks(trx: Tx): Promise<string[]> {
  const rows = await trx.selectFrom('webhooks').select('tenant_id').distinct().where('enabled', '=', true).execute();
  return rows.map((r) => r.tenant_id);
}

export async function enabledWebhooksOf(trx: Tx, tenantIds: string[]) {
  if (tenantIds.length === 0) return [];
  return trx
    .selectFrom('webhooks')
    .select(['id', 'tenant_id', 'events', 'created_at'])
    .where('tenant_id', 'in', tenantIds)
    .where('enabled', '=', true)
    .execute();
}

/** A delivery as the fan-out makes it; the rest of the row takes its defaults. */
export type NewDelivery = Pick<WebhookDelivery, 'id' | 'tenant_id' | 'webhook_id' | 'event_id' | 'event_type' | 'body'>;

/** One delivery per (endpoint, event): an event read twice is still delivered once. */
export async function insertDeliveries(trx: Tx, rows: NewDelivery[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await trx
    .insertInto('webhook_deliveries')
    .values(rows.map((r) => ({ ...r, next_attempt_at: sql<Date>`now()` })))
    .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
  return inserted.length;
}

export interface ClaimedDelivery {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  body: string;
  retry_step: number;
  url: string;
  secret: string;
  /** The rotated-out secret while it still signs beside the new one. */
  previous_secret: string | null;
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints for `leaseMs`: the row is this instance's
 * until it records the outcome or the lease runs out. SKIP LOCKED: instances claiming at once take
 * different rows instead of waiting for each other. One statement answers each delivery with its
 * endpoint's URL and secrets, oldest due first.
 */
/** Due deliveries, oldest first, none of the endpoints in `exceptWebhookIds` (slow ones at their cap). */
export async function claimDueDeliveries(
  trx: Tx,
  limit: number,
  lockToken: string,
  leaseMs: number,
  exceptWebhookIds: string[] = [],
): Promise<ClaimedDelivery[]> {
  // Written as SQL, not built: Kysely made this statement's tree anew at every claim, a visible share of the
  // dispatcher's thread per claim under bench:webhooks, the thread a drain waits on.
  // The endpoints are joined to the rows the update returns, not in the update: joined there, the planner
  // looked the claimed rows up through the endpoint's index of every delivery it ever had.
  const except = exceptWebhookIds.length > 0 ? sql`and d.webhook_id <> all(${exceptWebhookIds}::text[])` : sql``;
  const oldest = sql`
    select d.id from webhook_deliveries as d inner join webhooks as w on w.id = d.webhook_id
    where d.status = 'pending' and d.next_attempt_at <= now() and (d.locked_until is null or d.locked_until < now())
      and w.enabled = true ${except}
    order by d.next_attempt_at limit ${limit}
    for update of d skip locked`;
  const { rows } = await inDueOrder(trx, () =>
    sql<ClaimedDelivery>`
      with claimed as (
        update webhook_deliveries as d
        set locked_until = ${dbFromNow(leaseMs)}, lock_token = ${lockToken}, attempts = d.attempts + 1, last_attempt_at = now()
        where ${idIn('d.id', oldest)}
        returning d.id, d.tenant_id, d.webhook_id, d.event_id, d.body, d.retry_step
      )
      select c.id, c.tenant_id, c.webhook_id, c.event_id, c.body, c.retry_step, w.url, w.secret,
        case when w.previous_secret_expires_at > now() then w.previous_secret end as previous_secret
      from claimed as c inner join webhooks as w on w.id = c.webhook_id`.execute(trx),
  );
  // RETURNING keeps no order; ids grow with time, so the oldest delivery goes first.
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The outcome of one claimed attempt, to be written under its claim's token. */
export interface ClaimRef {
  id: string;
  lockToken: string;
}

// Many rows travel as one array per column, unnested into a relation: three parameters however many rows,
// where a VALUES list took three per row for the client to build and the server to parse.

/**
 * One column of such rows as a text array, sent as one comma-joined text: pg wrote an array parameter
 * element by element, about 4 µs of the dispatcher's thread per delivery. For values that hold no comma
 * (ids, UUID tokens, status codes: all made by the service).
 */
const column = (values: (string | number)[]) => sql`string_to_array(${values.join(',')}, ',')`;

/**
 * Many successes in one statement, each written only where its claim still holds the row; the endpoints
 * of the rows written end their failure streaks. Answers how many were written.
 */
export async function recordSuccesses(trx: Tx, rows: (ClaimRef & { statusCode: number })[]): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await sql<{ written: number }>`
    with done as (
      update webhook_deliveries as d
      set status = 'succeeded', next_attempt_at = null, locked_until = null, lock_token = null,
        last_status_code = v.status_code, last_error = null, delivered_at = now()
      from unnest(${column(rows.map((r) => r.id))}, ${column(rows.map((r) => r.lockToken))}, ${column(rows.map((r) => r.statusCode))}::integer[])
        as v (id, lock_token, status_code)
      where d.id = v.id and d.lock_token = v.lock_token
      returning d.webhook_id
    ), recovered as (
      update webhooks set failing_since = null
      where id in (select webhook_id from done) and failing_since is not null
    )
    select count(*)::integer as written from done`.execute(trx);
  return result.rows[0]?.written ?? 0;
}

/**
 * Gives back claims that were never attempted (the instance stopped, or the lease grew too short to
 * start one): the rows are free at once, and the attempt the claim counted is taken back.
 */
export async function releaseClaims(trx: Tx, rows: ClaimRef[]): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await sql`
    update webhook_deliveries as d
    set locked_until = null, lock_token = null, attempts = d.attempts - 1
    from unnest(${column(rows.map((r) => r.id))}, ${column(rows.map((r) => r.lockToken))}) as v (id, lock_token)
    where d.id = v.id and d.lock_token = v.lock_token`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

export async function clearFailingStreak(trx: Tx, webhookId: string) {
  await clearFailingStreaks(trx, [webhookId]);
}

export async function clearFailingStreaks(trx: Tx, webhookIds: string[]) {
  if (webhookIds.length === 0) return;
  await trx.updateTable('webhooks').set({ failing_since: null }).where('id', 'in', webhookIds).where('failing_since', 'is not', null).execute();
}

/** Starts the endpoint's failure streak unless one runs; answers whether it has run longer than `disableAfterMs`. */
export async function noteFailure(trx: Tx, webhookId: string, disableAfterMs: number): Promise<boolean> {
  const row = await trx
    .updateTable('webhooks')
    .set({ failing_since: sql<Date>`coalesce(failing_since, now())` })
    .where('id', '=', webhookId)
    .returning(sql<boolean>`failing_since < ${dbAgo(disableAfterMs)}`.as('too_long'))
    .executeTakeFirst();
  return row?.too_long ?? false;
}

/** Disables an enabled endpoint; false when it was already disabled (someone else acted first). */
export async function disableWebhook(trx: Tx, webhookId: string, reason: 'gone' | 'failing'): Promise<boolean> {
  const result = await trx
    .updateTable('webhooks')
    .set({ enabled: false, disabled_reason: reason, disabled_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', webhookId)
    .where('enabled', '=', true)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function activeOwnerEmails(trx: Tx, tenantId: string): Promise<string[]> {
  const rows = await trx
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('u.email')
    .where('m.tenant_id', '=', tenantId)
    .where('m.role', '=', 'owner')
    .where('m.status', '=', 'active')
    .execute();
  return rows.map((r) => r.email);
}


// ---- The queue, read for metrics (system role: every tenant) ------------------------------------------

/**
 * The pending deliveries across tenants: due now (in flight included) or scheduled for a retry, and the
 * age of the oldest due one. Deliveries of a disabled endpoint wait until it is enabled again: they are
 * counted apart (held), so they never make the due queue look stuck. Reads the partial due index.
 */
export async function queueStats(trx: Tx): Promise<{ due: number; scheduled: number; held: number; oldest_due_seconds: number }> {
  const row = await trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .where('d.status', '=', 'pending')
    .select([
      sql<number>`(count(*) filter (where w.enabled and d.next_attempt_at <= now()))::integer`.as('due'),
      sql<number>`(count(*) filter (where w.enabled and d.next_attempt_at > now()))::integer`.as('scheduled'),
      sql<number>`(count(*) filter (where not w.enabled))::integer`.as('held'),
      sql<number>`coalesce(extract(epoch from now() - min(d.next_attempt_at) filter (where w.enabled and d.next_attempt_at <= now())), 0)::float8`.as(
        'oldest_due_seconds',
      ),
    ])
    .executeTakeFirstOrThrow();
  return row;
}
