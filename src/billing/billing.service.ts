import { randomUUID } from 'node:crypto';
import { storageUsed } from '../files/file.service.ts';
import type { Logger } from 'pino';
import { createRequire } from 'node:module';
import type Stripe from 'stripe';
import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { BillingAccount, BillingInvoice, InvoiceStatus, SubscriptionStatus } from '../db/schema.ts';
import { AppError, conflict, invalidInput } from '../shared/errors.ts';
import { pageOf } from '../shared/pagination.ts';
import type { Principal, UserPrincipal } from '../shared/principal.ts';
import * as repo from './billing.repository.ts';
import { FREE_PLAN_ID, type Plan, SELF_HOSTED_PLAN } from './plans.ts';

type S = components['schemas'];

export interface BillingConfig {
  /** Unset: no payment provider; every tenant is on the self-hosted plan, unlimited. */
  stripe: { secretKey: string; webhookSecret: string } | undefined;
  plans: Plan[];
}

/** The limits other features enforce where they bite (docs/billing.md). Each takes the writing transaction. */
export interface PlanLimits {
  assertSeatsAvailable(trx: Tx, tenantId: string, adding: number): Promise<void>;
  assertConversationAvailable(trx: Tx, tenantId: string): Promise<void>;
  assertStorageAvailable(trx: Tx, tenantId: string, bytes: number): Promise<void>;
}

/** Statuses under which the subscription's plan applies. past_due: Stripe is still retrying the payment. */
const LIVE: readonly SubscriptionStatus[] = ['active', 'trialing', 'past_due'];

/** What applies to a tenant now: its plan, the limits, the period usage is counted in. */
interface Standing {
  plan: Plan;
  provider: 'stripe' | 'none';
  status: S['SubscriptionStatus'];
  seats: number | null;
  account: BillingAccount | undefined;
  periodStart: Date;
  periodEnd: Date;
  live: boolean;
}

const notConfigured = (detail = 'Billing is not configured on this installation (self-hosted plan)') => new AppError('ERR_BILLING_NOT_CONFIGURED', detail);

export const planLimit = (limit: 'seats' | 'conversations' | 'storage', detail: string) =>
  new AppError('ERR_PLAN_LIMIT', `Plan limit reached: ${limit} (${detail})`);

const calendarMonth = (now: Date) => ({
  start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
  end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
});

const fromUnix = (seconds: number | null | undefined): Date | null => (typeof seconds === 'number' ? new Date(seconds * 1000) : null);
const idOf = (ref: string | { id: string } | null | undefined): string | undefined => (typeof ref === 'string' ? ref : (ref?.id ?? undefined));

const INVOICE_STATUSES: readonly InvoiceStatus[] = ['draft', 'open', 'paid', 'uncollectible', 'void'];
const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid', 'paused'];

const toInvoiceDto = (i: BillingInvoice): S['Invoice'] => ({
  id: i.id,
  number: i.number,
  status: i.status,
  amount: Number(i.amount),
  currency: i.currency,
  period_start: i.period_start?.toISOString() ?? null,
  period_end: i.period_end?.toISOString() ?? null,
  hosted_invoice_url: i.hosted_invoice_url,
  pdf_url: i.pdf_url,
  created_at: i.created_at.toISOString(),
});

// The parts of Stripe's objects the mirror reads. Webhook payloads are typed by the API version of the
// endpoint, not of this library, so older shapes (period on the subscription) are read too.
interface SubscriptionObject {
  id: string;
  customer: string | { id: string };
  status: string;
  cancel_at_period_end?: boolean;
  current_period_start?: number;
  current_period_end?: number;
  metadata?: Record<string, string>;
  items?: { data?: { quantity?: number; current_period_start?: number; current_period_end?: number; price?: { id: string } }[] };
}

interface InvoiceObject {
  id: string;
  customer: string | { id: string } | null;
  number?: string | null;
  status?: string | null;
  amount_due?: number;
  currency?: string;
  created: number;
  period_start?: number;
  period_end?: number;
  hosted_invoice_url?: string | null;
  invoice_pdf?: string | null;
}

// Loaded only when a secret key is set: the client is a quarter of a second of every start otherwise.
const loadStripe = () => createRequire(import.meta.url)('stripe') as typeof Stripe;

export class BillingService implements PlanLimits {
  readonly #database: Database;
  readonly #logger: Logger;
  readonly #appUrl: string;
  readonly #plans: Plan[];
  readonly #stripe: Stripe | undefined;
  readonly #webhookSecret: string;
  /** The plan without a payment provider: SELF_HOSTED_PLAN, or BILLING_PLANS' self_hosted entry. */
  readonly #selfHosted: Plan;
  /** Whether any limit can bite: with a provider, or a self_hosted plan that has limits. Else the checks query nothing. */
  readonly #limited: boolean;

  constructor(deps: { database: Database; logger: Logger; appUrl: string; config: BillingConfig | undefined; stripe?: Stripe }) {
    this.#database = deps.database;
    this.#logger = deps.logger;
    this.#appUrl = deps.appUrl;
    this.#plans = deps.config?.plans ?? [];
    const stripeConfig = deps.config?.stripe;
    this.#webhookSecret = stripeConfig?.webhookSecret ?? '';
    this.#stripe = stripeConfig ? (deps.stripe ?? new (loadStripe())(stripeConfig.secretKey, { maxNetworkRetries: 2, timeout: 10_000 })) : undefined;
    this.#selfHosted = this.#plan(SELF_HOSTED_PLAN.id) ?? SELF_HOSTED_PLAN;
    const h = this.#selfHosted;
    this.#limited = this.#stripe !== undefined || h.seats !== null || h.conversationsPerPeriod !== null || h.storageBytes !== null;
  }

  // ---- Reads: from the mirror only, never from Stripe ---------------------------------------------

  async subscription(principal: Principal): Promise<S['BillingSubscription']> {
    const s = await this.#database.withTenant(principal.tenantId, (trx) => this.#standing(trx, principal.tenantId, new Date()));
    return {
      plan: s.plan.id,
      plan_name: s.plan.name,
      provider: s.provider,
      status: s.status,
      seats: s.seats,
      current_period_end: s.live ? (s.account?.current_period_end?.toISOString() ?? null) : null,
      cancel_at_period_end: s.live ? (s.account?.cancel_at_period_end ?? false) : false,
      limits: { seats: s.seats, conversations_per_period: s.plan.conversationsPerPeriod, storage_bytes: s.plan.storageBytes },
    };
  }

  async usage(principal: Principal): Promise<S['BillingUsage']> {
    const tenantId = principal.tenantId;
    return this.#database.withTenant(tenantId, async (trx) => {
      const s = await this.#standing(trx, tenantId, new Date());
      return {
        period_start: s.periodStart.toISOString(),
        period_end: s.periodEnd.toISOString(),
        seats_used: await repo.countFullSeats(trx, tenantId),
        seats_limit: s.seats,
        conversations: await repo.countConversationsSince(trx, tenantId, s.periodStart),
        conversations_limit: s.plan.conversationsPerPeriod,
        messages: await repo.countMessagesSince(trx, tenantId, s.periodStart),
        storage_bytes: await storageUsed(trx, tenantId),
        storage_limit_bytes: s.plan.storageBytes,
      };
    });
  }

  async invoices(principal: Principal, page: { limit: number; offset: number }): Promise<S['InvoiceList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listInvoices(trx, page));
    return { data: rows.map(toInvoiceDto), pagination: pageOf(total, page, rows.length) };
  }

  // ---- Limits, checked in the transaction of the write they guard ---------------------------------

  async assertSeatsAvailable(trx: Tx, tenantId: string, adding: number): Promise<void> {
    if (!this.#limited) return;
    await repo.lockPlanLimits(trx, tenantId);
    const s = await this.#standing(trx, tenantId, new Date());
    if (s.seats === null) return;
    const used = await repo.countFullSeats(trx, tenantId);
    if (used + adding > s.seats) {
      throw planLimit('seats', `${used} of ${s.seats} full seats are taken on the ${s.plan.name} plan; add seats or upgrade, or give a lite seat`);
    }
  }

  async assertConversationAvailable(trx: Tx, tenantId: string): Promise<void> {
    if (!this.#limited) return;
    await repo.lockPlanLimits(trx, tenantId);
    const s = await this.#standing(trx, tenantId, new Date());
    const limit = s.plan.conversationsPerPeriod;
    if (limit === null) return;
    const started = await repo.countConversationsSince(trx, tenantId, s.periodStart);
    if (started >= limit) {
      throw planLimit('conversations', `${started} of ${limit} conversations this period on the ${s.plan.name} plan, until ${s.periodEnd.toISOString()}; upgrade to start more`);
    }
  }

  /** For the files feature: call it in the upload's transaction before the file's row is written. */
  async assertStorageAvailable(trx: Tx, tenantId: string, bytes: number): Promise<void> {
    if (!this.#limited) return;
    await repo.lockPlanLimits(trx, tenantId);
    const s = await this.#standing(trx, tenantId, new Date());
    const limit = s.plan.storageBytes;
    if (limit === null) return;
    const used = await storageUsed(trx, tenantId);
    if (used + bytes > limit) throw planLimit('storage', `${used} of ${limit} bytes stored on the ${s.plan.name} plan; this file needs ${bytes}`);
  }

  // ---- Stripe: checkout, portal, webhook ----------------------------------------------------------

  async checkout(user: UserPrincipal, input: S['CheckoutCreate']): Promise<S['CheckoutSession']> {
    const stripe = this.#requireStripe();
    const sold = this.#plans.filter((p) => p.id !== FREE_PLAN_ID && p.id !== SELF_HOSTED_PLAN.id);
    const plan = sold.find((p) => p.id === input.plan);
    if (!plan) {
      throw invalidInput({ field: 'plan', message: `is not a plan of this installation (${sold.map((p) => p.id).join(', ')})` });
    }
    if (!plan.stripePriceId) throw notConfigured(`The plan ${plan.id} has no Stripe price (set stripe_price_id in BILLING_PLANS)`);
    const { standing, seatsUsed } = await this.#database.withTenant(user.tenantId, async (trx) => ({
      standing: await this.#standing(trx, user.tenantId, new Date()),
      seatsUsed: await repo.countFullSeats(trx, user.tenantId),
    }));
    if (standing.live) throw conflict('The tenant already has a subscription: change its plan or seats in the billing portal');
    const seats = input.seats ?? Math.max(1, seatsUsed);
    if (plan.seats !== null && seats > plan.seats) throw invalidInput({ field: 'seats', message: `must be at most ${plan.seats} on the ${plan.name} plan` });
    if (seats < seatsUsed) throw invalidInput({ field: 'seats', message: `must cover the ${seatsUsed} full seats in use` });
    const customer = await this.#customerOf(stripe, user.tenantId);
    const session = await stripe.checkout.sessions.create(
      {
        mode: 'subscription',
        customer,
        client_reference_id: user.tenantId,
        line_items: [{ price: plan.stripePriceId, quantity: seats }],
        success_url: input.success_url,
        cancel_url: input.cancel_url,
        subscription_data: { metadata: { tenant_id: user.tenantId, plan: plan.id } },
        metadata: { tenant_id: user.tenantId, plan: plan.id },
      },
      // Each checkout is its own session; the key makes the library's retries of this one call safe.
      { idempotencyKey: `checkout-${user.tenantId}-${randomUUID()}` },
    );
    if (!session.url) throw new Error(`Stripe answered checkout session ${session.id} without a url`);
    return { id: session.id, url: session.url };
  }

  async portal(user: UserPrincipal, input: S['PortalCreate'] | undefined): Promise<S['PortalSession']> {
    const stripe = this.#requireStripe();
    const customer = await this.#customerOf(stripe, user.tenantId);
    const session = await stripe.billingPortal.sessions.create(
      { customer, return_url: input?.return_url ?? `${this.#appUrl}/settings/billing` },
      { idempotencyKey: `portal-${user.tenantId}-${randomUUID()}` },
    );
    return { url: session.url };
  }

  /** Verifies and applies one delivery of a Stripe event; a redelivered event changes nothing. */
  async receiveWebhook(rawBody: Buffer | string, signature: string): Promise<S['WebhookReceipt']> {
    const stripe = this.#requireStripe();
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(rawBody, signature, this.#webhookSecret);
    } catch (err) {
      throw new AppError('ERR_VALIDATION', 'The Stripe-Signature does not verify for this body', {
        fieldErrors: [{ path: '/headers/stripe-signature', message: 'does not match the body under the webhook secret (or is too old)' }],
        cause: err,
      });
    }
    return this.#database.asSystem(async (trx) => {
      // Recorded in the transaction that applies it: an event whose apply fails is not marked, and
      // Stripe's retry applies it then. A concurrent duplicate waits on the key, then finds it taken.
      if (!(await repo.recordStripeEvent(trx, event.id, event.type))) return { received: true, duplicate: true };
      const eventAt = new Date(event.created * 1000);
      const object = event.data.object as unknown;
      if (event.type.startsWith('customer.subscription.')) await this.#mirrorSubscription(trx, object as SubscriptionObject, eventAt);
      else if (event.type.startsWith('invoice.') && (object as { object?: string }).object === 'invoice') await this.#mirrorInvoice(trx, object as InvoiceObject, eventAt);
      return { received: true, duplicate: false };
    });
  }

  // ---- Internals ---------------------------------------------------------------------------------

  #requireStripe(): Stripe {
    if (!this.#stripe) throw notConfigured();
    return this.#stripe;
  }

  #plan(id: string): Plan | undefined {
    return this.#plans.find((p) => p.id === id);
  }

  async #standing(trx: Tx, tenantId: string, now: Date): Promise<Standing> {
    const month = calendarMonth(now);
    if (!this.#stripe) {
      const plan = this.#selfHosted;
      return { plan, provider: 'none', status: 'active', seats: plan.seats, account: undefined, periodStart: month.start, periodEnd: month.end, live: false };
    }
    const account = await repo.findAccount(trx, tenantId);
    const free = this.#plan(FREE_PLAN_ID)!;
    if (account?.status && LIVE.includes(account.status) && account.plan) {
      // A price this installation does not list still belongs to a paying customer: its seats hold, nothing else is limited.
      const plan = this.#plan(account.plan) ?? { ...SELF_HOSTED_PLAN, id: account.plan, name: account.plan };
      const start = account.current_period_start;
      const end = account.current_period_end;
      // A renewal the webhook has not reported yet must not count the last period's usage against this one.
      const inPeriod = start && end && start <= now && now < end;
      return {
        plan,
        provider: 'stripe',
        status: account.status,
        seats: account.seats ?? plan.seats,
        account,
        periodStart: inPeriod ? start : month.start,
        periodEnd: inPeriod ? end : month.end,
        live: true,
      };
    }
    return { plan: free, provider: 'stripe', status: account?.status ?? 'none', seats: free.seats, account, periodStart: month.start, periodEnd: month.end, live: false };
  }

  /** The tenant's Stripe customer: created on first use (one per tenant, even when two requests race), then reused. */
  async #customerOf(stripe: Stripe, tenantId: string): Promise<string> {
    const known = await this.#database.withTenant(tenantId, (trx) => repo.findAccount(trx, tenantId));
    if (known?.stripe_customer_id) return known.stripe_customer_id;
    // The same key for the tenant's every attempt: Stripe answers a racing or retried create with the same customer.
    const customer = await stripe.customers.create({ metadata: { tenant_id: tenantId } }, { idempotencyKey: `customer-${tenantId}` });
    return this.#database.withTenant(tenantId, async (trx) => {
      const now = new Date();
      const account = await repo.lockAccount(trx, tenantId, now);
      if (account.stripe_customer_id) return account.stripe_customer_id;
      await repo.setCustomer(trx, tenantId, customer.id, now);
      return customer.id;
    });
  }

  async #mirrorSubscription(trx: Tx, sub: SubscriptionObject, eventAt: Date): Promise<void> {
    const customerId = idOf(sub.customer);
    const account = customerId ? await repo.findAccountByCustomer(trx, customerId) : undefined;
    if (!account) {
      this.#logger.warn({ subscription: sub.id, customer: customerId }, 'stripe subscription of an unknown customer ignored');
      return;
    }
    if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(sub.status)) {
      this.#logger.warn({ subscription: sub.id, status: sub.status }, 'stripe subscription status unknown; ignored');
      return;
    }
    const item = sub.items?.data?.[0];
    const priceId = item?.price?.id;
    const plan = (priceId ? this.#plans.find((p) => p.stripePriceId === priceId)?.id : undefined) ?? sub.metadata?.plan ?? null;
    const applied = await repo.applySubscription(
      trx,
      account.tenant_id,
      {
        stripe_subscription_id: sub.id,
        plan,
        status: sub.status as SubscriptionStatus,
        seats: item?.quantity ?? 1,
        current_period_start: fromUnix(item?.current_period_start ?? sub.current_period_start),
        current_period_end: fromUnix(item?.current_period_end ?? sub.current_period_end),
        cancel_at_period_end: sub.cancel_at_period_end ?? false,
      },
      eventAt,
      new Date(),
    );
    if (!applied) this.#logger.info({ subscription: sub.id, event_at: eventAt }, 'stripe subscription event older than the mirror; ignored');
  }

  async #mirrorInvoice(trx: Tx, invoice: InvoiceObject, eventAt: Date): Promise<void> {
    const customerId = idOf(invoice.customer);
    const account = customerId ? await repo.findAccountByCustomer(trx, customerId) : undefined;
    if (!account) {
      this.#logger.warn({ invoice: invoice.id, customer: customerId }, 'stripe invoice of an unknown customer ignored');
      return;
    }
    const status = (INVOICE_STATUSES as readonly string[]).includes(invoice.status ?? '') ? (invoice.status as InvoiceStatus) : 'draft';
    await repo.upsertInvoice(trx, {
      id: invoice.id,
      tenant_id: account.tenant_id,
      number: invoice.number ?? null,
      status,
      amount: invoice.amount_due ?? 0,
      currency: invoice.currency ?? 'usd',
      period_start: fromUnix(invoice.period_start),
      period_end: fromUnix(invoice.period_end),
      hosted_invoice_url: invoice.hosted_invoice_url ?? null,
      pdf_url: invoice.invoice_pdf ?? null,
      created_at: new Date(invoice.created * 1000),
      event_at: eventAt,
    });
  }
}
