import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
import type { BillingInvoice, SubscriptionStatus } from '../db/schema.ts';

// Advisory lock class of a tenant's plan limits (two-key form, keyed by the tenant like the event writers').
const PLAN_LIMIT_LOCK = 0x62696c6c;

/**
 * Serialises the checks of a tenant's limits with the writes they guard, until the transaction ends:
 * two members added at once cannot both take the last seat.
 */
export async function lockPlanLimits(trx: Tx, tenantId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(${PLAN_LIMIT_LOCK}, hashtext(${tenantId}) & 2147483647)`.execute(trx);
}

export async function findAccount(trx: Tx, tenantId: string) {
  return trx.selectFrom('billing_accounts').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst();
}

/** For the webhook, which knows a Stripe customer, not a tenant (system role). */
export async function findAccountByCustomer(trx: Tx, customerId: string) {
  return trx.selectFrom('billing_accounts').selectAll().where('stripe_customer_id', '=', customerId).executeTakeFirst();
}

/** The tenant's account row, created empty if missing, locked until the transaction ends. */
export async function lockAccount(trx: Tx, tenantId: string, now: Date) {
  await trx
    .insertInto('billing_accounts')
    .values({ tenant_id: tenantId, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('tenant_id').doNothing())
    .execute();
  return trx.selectFrom('billing_accounts').selectAll().where('tenant_id', '=', tenantId).forUpdate().executeTakeFirstOrThrow();
}

export async function setCustomer(trx: Tx, tenantId: string, customerId: string, now: Date): Promise<void> {
  await trx.updateTable('billing_accounts').set({ stripe_customer_id: customerId, updated_at: now }).where('tenant_id', '=', tenantId).execute();
}

export interface SubscriptionMirror {
  stripe_subscription_id: string;
  plan: string | null;
  status: SubscriptionStatus;
  seats: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
}

/**
 * Mirrors a subscription unless the account already holds a newer event's state (`eventAt`, the event's
 * created time; a tie applies: Stripe's times are whole seconds, and the later delivery is the better guess).
 * True when applied.
 */
export async function applySubscription(trx: Tx, tenantId: string, mirror: SubscriptionMirror, eventAt: Date, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('billing_accounts')
    .set({ ...mirror, subscription_event_at: eventAt, updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('subscription_event_at', 'is', null), eb('subscription_event_at', '<=', eventAt)]))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** An invoice as the mirror keeps it: the table's row. */
export type InvoiceMirror = BillingInvoice;

/** Inserts or updates an invoice, unless the stored one comes from a newer event. True when applied. */
export async function upsertInvoice(trx: Tx, invoice: InvoiceMirror): Promise<boolean> {
  const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = invoice;
  const row = await trx
    .insertInto('billing_invoices')
    .values(invoice)
    .onConflict((oc) =>
      oc
        .column('id')
        .doUpdateSet(changes)
        .where('billing_invoices.event_at', '<=', invoice.event_at),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function listInvoices(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('billing_invoices').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'), page);
}

/** Records a Stripe event as applied; false when it already was (a redelivery). */
export async function recordStripeEvent(trx: Tx, id: string, type: string): Promise<boolean> {
  const row = await trx
    .insertInto('stripe_events')
    .values({ id, type })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Full seats taken: active members and invitations (an invited member takes the seat on accepting). */
export async function countFullSeats(trx: Tx, tenantId: string): Promise<number> {
  const row = await trx
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('seat', '=', 'full')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function countConversationsSince(trx: Tx, tenantId: string, since: Date): Promise<number> {
  const row = await trx
    .selectFrom('conversations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function countMessagesSince(trx: Tx, tenantId: string, since: Date): Promise<number> {
  const row = await trx
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
