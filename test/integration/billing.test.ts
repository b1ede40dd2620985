import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import Stripe from 'stripe';
import request from 'supertest';
import { BillingService } from '../../src/billing/billing.service.ts';
import { parsePlans } from '../../src/billing/plans.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { AppError } from '../../src/shared/errors.ts';
import { addMember, createTenant, createVisitor, type TestTenant, uniqueEmail } from '../support/factories.ts';
import { getHarness, TEST_CONFIG } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { FakeStripe } from '../support/fake-stripe.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WEBHOOK_SECRET = 'whsec_test_0123456789abcdef';
const SITE = 'https://shop.billing.example';
const DAY_S = 86_400;
/** The suite's "now" in Stripe's seconds: subscription periods are around it. */
const NOW_S = Math.floor(Date.now() / 1000);

// Small limits so the tests reach them: free 2 seats and 2 conversations; starter 3 and 3; pro 10 seats, unlimited conversations.
const PLANS = parsePlans(
  JSON.stringify({
    free: { seats: 2, conversations_per_period: 2, storage_bytes: 1000 },
    starter: { stripe_price_id: 'price_starter', seats: 3, conversations_per_period: 3 },
    pro: { stripe_price_id: 'price_pro', seats: 10, conversations_per_period: null },
  }),
);

describe('billing', () => {
  const fake = new FakeStripe();
  let stripe: Stripe;
  let app: Express;

  before(async () => {
    const port = await fake.start();
    stripe = new Stripe('sk_test_billing', { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 });
    const h = await getHarness();
    app = h.appWith({}, { config: { ...TEST_CONFIG, billing: { stripe: { secretKey: 'sk_test_billing', webhookSecret: WEBHOOK_SECRET }, plans: PLANS } }, stripe });
  });
  after(() => fake.close());

  const callsFor = (tenantId: string) => fake.calls.filter((c) => JSON.stringify(c).includes(tenantId));

  /** A tenant with a Stripe customer (made through the portal, as an owner would). */
  async function customerOf(t: TestTenant): Promise<string> {
    await request(app).post('/api/v1/billing/portal').set(bearer(t.owner.accessToken)).send({}).expect(201);
    const created = fake.calls.find((c) => c.path === '/v1/customers' && c.form['metadata[tenant_id]'] === t.tenantId);
    expect(created, 'the customer was created at Stripe').to.exist;
    const portal = fake.calls.filter((c) => c.path === '/v1/billing_portal/sessions' && c.idempotencyKey?.startsWith(`portal-${t.tenantId}-`)).at(-1)!;
    return portal.form.customer!;
  }

  let eventSeq = 0;
  function signed(event: Record<string, unknown>, secret = WEBHOOK_SECRET) {
    const payload = JSON.stringify(event);
    return { payload, signature: stripe.webhooks.generateTestHeaderString({ payload, secret }) };
  }
  function deliver(event: Record<string, unknown>, secret = WEBHOOK_SECRET) {
    const { payload, signature } = signed(event, secret);
    return request(app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', signature).send(payload);
  }

  function subscriptionEvent(
    customer: string,
    o: { type?: string; id?: string; created: number; status?: string; price?: string; quantity?: number; cancelAtPeriodEnd?: boolean; subscription?: string },
  ) {
    const now = NOW_S;
    return {
      id: o.id ?? `evt_sub_${++eventSeq}_${randomUUID()}`,
      object: 'event',
      type: o.type ?? 'customer.subscription.updated',
      created: o.created,
      data: {
        object: {
          id: o.subscription ?? `sub_${customer}`,
          object: 'subscription',
          customer,
          status: o.status ?? 'active',
          cancel_at_period_end: o.cancelAtPeriodEnd ?? false,
          metadata: {},
          items: {
            object: 'list',
            data: [{ id: 'si_1', object: 'subscription_item', quantity: o.quantity ?? 5, current_period_start: now - DAY_S, current_period_end: now + 29 * DAY_S, price: { id: o.price ?? 'price_starter', object: 'price' } }],
          },
        },
      },
    };
  }

  function invoiceEvent(customer: string, o: { type: string; created: number; id: string; status: string; amount?: number; number?: string }) {
    return {
      id: `evt_inv_${++eventSeq}_${randomUUID()}`,
      object: 'event',
      type: o.type,
      created: o.created,
      data: {
        object: {
          id: o.id,
          object: 'invoice',
          customer,
          number: o.number ?? 'ABC-0001',
          status: o.status,
          amount_due: o.amount ?? 4900,
          currency: 'eur',
          created: 1_790_000_000,
          period_start: 1_790_000_000,
          period_end: 1_790_000_000 + 30 * DAY_S,
          hosted_invoice_url: `https://invoice.stripe.test/i/${o.id}`,
          invoice_pdf: `https://pay.stripe.test/invoice/${o.id}/pdf`,
        },
      },
    };
  }

  const subscriptionOf = async (t: TestTenant) => (await request(app).get('/api/v1/billing/subscription').set(bearer(t.owner.accessToken)).expect(200)).body;

  describe('self-hosted (no STRIPE_SECRET_KEY)', () => {
    it('reads answer the unlimited self-hosted plan and usage from the database; checkout, portal and webhook are 409', async () => {
      const { app: plain } = await getHarness();
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const sub = await request(plain).get('/api/v1/billing/subscription').set(auth).expect(200);
      expect(sub.body).to.deep.equal({
        plan: 'self_hosted',
        plan_name: 'Self-hosted',
        provider: 'none',
        status: 'active',
        seats: null,
        current_period_end: null,
        cancel_at_period_end: false,
        limits: { seats: null, conversations_per_period: null, storage_bytes: null },
      });
      const visitorId = await createVisitor(t);
      await request(plain).post('/api/v1/conversations').set(auth).send({ visitor_id: visitorId, message: 'Hello' }).expect(201);
      await addMember(t, { seat: 'lite' });
      const usage = (await request(plain).get('/api/v1/billing/usage').set(auth).expect(200)).body;
      expect(usage).to.include({ seats_used: 1, seats_limit: null, conversations: 1, conversations_limit: null, messages: 1, storage_bytes: 0, storage_limit_bytes: null });
      const start = new Date(usage.period_start);
      expect(start.getUTCDate()).to.equal(1);
      expect(new Date(usage.period_end).getTime()).to.be.greaterThan(Date.now());
      expect((await request(plain).get('/api/v1/billing/invoices').set(auth).expect(200)).body).to.deep.equal({
        data: [],
        pagination: { total: 0, limit: 20, offset: 0, has_more: false, next_cursor: null },
      });
      const checkout = { plan: 'starter', success_url: 'https://app.example/ok', cancel_url: 'https://app.example/no' };
      expectProblem(await request(plain).post('/api/v1/billing/checkout').set(auth).send(checkout), 409, 'ERR_BILLING_NOT_CONFIGURED');
      expectProblem(await request(plain).post('/api/v1/billing/portal').set(auth).send({}), 409, 'ERR_BILLING_NOT_CONFIGURED');
      const { payload, signature } = signed(subscriptionEvent('cus_x', { created: 1 }));
      expectProblem(
        await request(plain).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', signature).send(payload),
        409,
        'ERR_BILLING_NOT_CONFIGURED',
      );
    });

    it('no limit bites: members and conversations past every default plan limit', async () => {
      const { app: plain } = await getHarness();
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      for (let i = 0; i < 3; i++) await request(plain).post(`/api/v1/tenants/${t.tenantId}/members`).set(auth).send({ email: uniqueEmail(), role: 'agent' }).expect(201);
      for (let i = 0; i < 3; i++) await request(plain).post('/api/v1/conversations').set(auth).send({ visitor_id: await createVisitor(t) }).expect(201);
    });
  });

  describe('limits from BILLING_PLANS alone (no STRIPE_SECRET_KEY)', () => {
    // What a self-hoster or a tester sets: the self_hosted plan with limits, no payment provider at all.
    const env = { BILLING_PLANS: JSON.stringify({ self_hosted: { name: 'Our team', seats: 2, conversations_per_period: 2, storage_bytes: 1000 } }) };
    let limited: Express;
    before(async () => {
      const { billing } = loadConfig(env);
      expect(billing.stripe).to.equal(undefined);
      limited = (await getHarness()).appWith({}, { config: { ...TEST_CONFIG, billing } });
    });

    it('the reads answer the configured self_hosted plan and its limits; checkout and portal stay 409', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      expect((await request(limited).get('/api/v1/billing/subscription').set(auth).expect(200)).body).to.deep.equal({
        plan: 'self_hosted',
        plan_name: 'Our team',
        provider: 'none',
        status: 'active',
        seats: 2,
        current_period_end: null,
        cancel_at_period_end: false,
        limits: { seats: 2, conversations_per_period: 2, storage_bytes: 1000 },
      });
      expect((await request(limited).get('/api/v1/billing/usage').set(auth).expect(200)).body).to.include({ seats_limit: 2, conversations_limit: 2, storage_limit_bytes: 1000 });
      const checkout = { plan: 'self_hosted', success_url: 'https://app.example/ok', cancel_url: 'https://app.example/no' };
      expectProblem(await request(limited).post('/api/v1/billing/checkout').set(auth).send(checkout), 409, 'ERR_BILLING_NOT_CONFIGURED');
      expectProblem(await request(limited).post('/api/v1/billing/portal').set(auth).send({}), 409, 'ERR_BILLING_NOT_CONFIGURED');
    });

    it('seats, conversations and storage bite at the configured limits with 402 ERR_PLAN_LIMIT', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const add = (seat: 'full' | 'lite') => request(limited).post(`/api/v1/tenants/${t.tenantId}/members`).set(auth).send({ email: uniqueEmail(), role: 'agent', seat });
      await add('full').expect(201);
      expect(expectProblem(await add('full'), 402, 'ERR_PLAN_LIMIT').detail).to.match(/^Plan limit reached: seats \(2 of 2 full seats are taken on the Our team plan/);
      await add('lite').expect(201);

      const start = async () => request(limited).post('/api/v1/conversations').set(auth).send({ visitor_id: await createVisitor(t) });
      expect((await start()).status).to.equal(201);
      expect((await start()).status).to.equal(201);
      expect(expectProblem(await start(), 402, 'ERR_PLAN_LIMIT').detail).to.match(/^Plan limit reached: conversations \(2 of 2/);

      const upload = (bytes: number) => request(limited).post('/api/v1/files').set(auth).attach('file', Buffer.alloc(bytes, 0x61), 'notes.txt');
      await upload(600).expect(201);
      expect(expectProblem(await upload(401), 402, 'ERR_PLAN_LIMIT').detail).to.match(/^Plan limit reached: storage \(600 of 1000 bytes/);
      await upload(400).expect(201);
      expect((await request(limited).get('/api/v1/billing/usage').set(auth).expect(200)).body).to.include({ seats_used: 2, conversations: 2, storage_bytes: 1000 });
    });

    it('self_hosted cannot be sold nor removed', () => {
      expect(() => parsePlans('{"self_hosted":{"stripe_price_id":"price_1"}}')).to.throw(/self_hosted: stripe_price_id must be left out/);
      expect(() => parsePlans('{"self_hosted":false}')).to.throw(/self_hosted plan cannot be removed/);
      // Given no limit, it stays the unlimited plan, and nothing is checked.
      expect(parsePlans('{"self_hosted":{"name":"Ours"}}').find((p) => p.id === 'self_hosted')).to.deep.equal({
        id: 'self_hosted',
        name: 'Ours',
        stripePriceId: null,
        seats: null,
        conversationsPerPeriod: null,
        storageBytes: null,
      });
    });
  });

  describe('access', () => {
    it('owners and admins read; agents are refused; API keys need billing:read and cannot start checkout or portal', async () => {
      const t = await createTenant();
      const admin = await addMember(t, { role: 'admin', seat: 'lite' });
      const agent = await addMember(t, { role: 'agent', seat: 'lite' });
      const { login } = await import('../support/factories.ts');
      await request(app).get('/api/v1/billing/usage').set(bearer(await login(admin.email))).expect(200);
      expectProblem(await request(app).get('/api/v1/billing/subscription').set(bearer(await login(agent.email))), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).post('/api/v1/billing/portal').set(bearer(await login(agent.email))).send({}), 403, 'ERR_FORBIDDEN');
      expectProblem(await request(app).get('/api/v1/billing/subscription'), 401, 'ERR_UNAUTHENTICATED');
      const key = async (scopes: string[]) =>
        (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'k', scopes }).expect(201)).body.key as string;
      const reader = { 'X-API-Key': await key(['billing:read']), 'X-Tenant-ID': t.tenantId };
      for (const path of ['subscription', 'usage', 'invoices']) await request(app).get(`/api/v1/billing/${path}`).set(reader).expect(200);
      expectProblem(await request(app).post('/api/v1/billing/portal').set(reader).send({}), 403, 'ERR_USER_TOKEN_REQUIRED');
      const other = { 'X-API-Key': await key(['tenant:read']), 'X-Tenant-ID': t.tenantId };
      expectProblem(await request(app).get('/api/v1/billing/usage').set(other), 403, 'ERR_FORBIDDEN');
    });
  });

  describe('with Stripe', () => {
    it('checkout: one customer per tenant (idempotency key), a subscription-mode session with the plan price and seats', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const body = { plan: 'starter', seats: 2, success_url: 'https://app.example/ok', cancel_url: 'https://app.example/no' };
      const first = await request(app).post('/api/v1/billing/checkout').set(auth).send(body).expect(201);
      expect(first.body.id).to.match(/^cs_test_/);
      expect(first.body.url).to.equal(`https://checkout.stripe.test/c/pay/${first.body.id}`);
      const second = await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...body, plan: 'pro', seats: undefined }).expect(201);
      expect(second.body.id).not.to.equal(first.body.id);

      const calls = callsFor(t.tenantId);
      const customers = calls.filter((c) => c.path === '/v1/customers');
      expect(customers, 'the customer is created once, then reused').to.have.length(1);
      expect(customers[0]).to.deep.include({ method: 'POST', idempotencyKey: `customer-${t.tenantId}` });
      const customerId = calls.find((c) => c.path === '/v1/checkout/sessions')!.form.customer;
      expect(customerId).to.match(/^cus_test/);
      const sessions = calls.filter((c) => c.path === '/v1/checkout/sessions');
      expect(sessions).to.have.length(2);
      expect(sessions[0]!.form).to.include({
        mode: 'subscription',
        customer: customerId,
        client_reference_id: t.tenantId,
        'line_items[0][price]': 'price_starter',
        'line_items[0][quantity]': '2',
        success_url: body.success_url,
        cancel_url: body.cancel_url,
        'subscription_data[metadata][tenant_id]': t.tenantId,
        'subscription_data[metadata][plan]': 'starter',
      });
      // Seats default to the full seats in use (the owner).
      expect(sessions[1]!.form).to.include({ customer: customerId, 'line_items[0][price]': 'price_pro', 'line_items[0][quantity]': '1' });
      expect(sessions[0]!.idempotencyKey).to.match(new RegExp(`^checkout-${t.tenantId}-`));
      expect(sessions[1]!.idempotencyKey).not.to.equal(sessions[0]!.idempotencyKey);
    });

    it('portal answers a billing-portal URL for the same customer, returning to the web app by default', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const a = await request(app).post('/api/v1/billing/portal').set(auth).send({}).expect(201);
      expect(a.body.url).to.match(/^https:\/\/billing\.stripe\.test\/p\/session\//);
      await request(app).post('/api/v1/billing/portal').set(auth).send({ return_url: 'https://app.example/back' }).expect(201);
      const portals = fake.calls.filter((c) => c.path === '/v1/billing_portal/sessions' && c.idempotencyKey?.startsWith(`portal-${t.tenantId}-`));
      expect(portals).to.have.length(2);
      expect(fake.calls.filter((c) => c.path === '/v1/customers' && c.form['metadata[tenant_id]'] === t.tenantId), 'one customer').to.have.length(1);
      expect(portals[0]!.form).to.deep.equal({ customer: portals[1]!.form.customer, return_url: 'http://app.test/settings/billing' });
      expect(portals[1]!.form.return_url).to.equal('https://app.example/back');
      expect(portals[0]!.idempotencyKey).to.match(new RegExp(`^portal-${t.tenantId}-`));
    });

    it('checkout errors: unknown plan 400, plan without a price 409, seats past the plan or under those in use 400, already subscribed 409', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const base = { success_url: 'https://app.example/ok', cancel_url: 'https://app.example/no' };
      const unknown = expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'platinum' }), 400, 'ERR_VALIDATION');
      expect(unknown.errors).to.deep.equal([{ path: '/body/plan', message: 'is not a plan of this installation (starter, pro, business)' }]);
      expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'free' }), 400, 'ERR_VALIDATION');
      const noPrice = expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'business' }), 409, 'ERR_BILLING_NOT_CONFIGURED');
      expect(noPrice.detail).to.contain('business');
      const tooMany = expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'starter', seats: 4 }), 400, 'ERR_VALIDATION');
      expect(tooMany.errors[0].path).to.equal('/body/seats');
      await addMember(t);
      const tooFew = expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'starter', seats: 1 }), 400, 'ERR_VALIDATION');
      expect(tooFew.errors).to.deep.equal([{ path: '/body/seats', message: 'must cover the 2 full seats in use' }]);
      expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'starter', success_url: 'not a url' }), 400, 'ERR_VALIDATION');
      expect(callsFor(t.tenantId), 'no refused checkout reached Stripe').to.deep.equal([]);
      const customer = await customerOf(t);
      await deliver(subscriptionEvent(customer, { created: 1_800_000_000 })).expect(200);
      expectProblem(await request(app).post('/api/v1/billing/checkout').set(auth).send({ ...base, plan: 'pro' }), 409, 'ERR_CONFLICT');
    });

    it('webhook: a bad, missing or foreign signature is 400 and changes nothing', async () => {
      const t = await createTenant();
      const customer = await customerOf(t);
      const event = subscriptionEvent(customer, { created: 1_800_000_000, price: 'price_pro', quantity: 9 });
      const bad = expectProblem(await deliver(event, 'whsec_someone_else'), 400, 'ERR_VALIDATION');
      expect(bad.errors).to.deep.equal([{ path: '/headers/stripe-signature', message: 'does not match the body under the webhook secret (or is too old)' }]);
      const { payload, signature } = signed(event);
      // The signature is over the exact bytes: the same event re-serialised (spaces) does not verify.
      const reformatted = JSON.stringify(JSON.parse(payload), null, 2);
      expectProblem(
        await request(app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', signature).send(reformatted),
        400,
        'ERR_VALIDATION',
      );
      const missing = expectProblem(await request(app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').send(payload), 400, 'ERR_VALIDATION');
      expect(missing.errors.map((e: { path: string }) => e.path)).to.include('/headers/stripe-signature');
      expect((await subscriptionOf(t)).plan).to.equal('free');
      // The same bytes, signed: applied.
      await request(app).post('/api/v1/billing/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', signature).send(payload).expect(200, { received: true, duplicate: false });
      expect(await subscriptionOf(t)).to.include({ plan: 'pro', seats: 9 });
    });

    it('webhook: a redelivered event id is applied once, even with a newer body', async () => {
      const t = await createTenant();
      const customer = await customerOf(t);
      const first = subscriptionEvent(customer, { id: `evt_once_${t.tenantId}`, created: 1_800_000_000, quantity: 3 });
      await deliver(first).expect(200, { received: true, duplicate: false });
      await deliver(first).expect(200, { received: true, duplicate: true });
      // Same id, later `created`, other seats: a replay by id, so it must not apply.
      await deliver({ ...subscriptionEvent(customer, { created: 1_800_000_500, quantity: 2 }), id: first.id }).expect(200, { received: true, duplicate: true });
      expect(await subscriptionOf(t)).to.include({ plan: 'starter', status: 'active', seats: 3 });
    });

    it('webhook: out-of-order subscription updates end in the newest state; a late update never revives a deleted subscription', async () => {
      const t = await createTenant();
      const customer = await customerOf(t);
      const T = 1_800_000_000;
      await deliver(subscriptionEvent(customer, { created: T + 300, price: 'price_pro', quantity: 7, cancelAtPeriodEnd: true })).expect(200);
      await deliver(subscriptionEvent(customer, { created: T + 200, status: 'past_due', quantity: 4 })).expect(200, { received: true, duplicate: false });
      await deliver(subscriptionEvent(customer, { type: 'customer.subscription.created', created: T, status: 'incomplete', quantity: 1 })).expect(200);
      const sub = await subscriptionOf(t);
      expect(sub).to.include({ plan: 'pro', plan_name: 'Pro', provider: 'stripe', status: 'active', seats: 7, cancel_at_period_end: true });
      expect(new Date(sub.current_period_end).getTime()).to.be.greaterThan(Date.now());
      expect(sub.limits).to.deep.equal({ seats: 7, conversations_per_period: null, storage_bytes: PLANS.find((p) => p.id === 'pro')!.storageBytes });
      await deliver(subscriptionEvent(customer, { type: 'customer.subscription.deleted', created: T + 400, status: 'canceled', price: 'price_pro', quantity: 7 })).expect(200);
      await deliver(subscriptionEvent(customer, { created: T + 350, price: 'price_pro', quantity: 8 })).expect(200);
      expect(await subscriptionOf(t)).to.include({ plan: 'free', status: 'canceled', seats: 2, current_period_end: null, cancel_at_period_end: false });
    });

    it('webhook: invoices mirrored with every field, newest first; an older invoice event does not undo a newer one', async () => {
      const t = await createTenant();
      const customer = await customerOf(t);
      const T = 1_800_000_000;
      const id = `in_${t.tenantId.slice(-12)}`;
      await deliver(invoiceEvent(customer, { type: 'invoice.paid', created: T + 100, id, status: 'paid', number: 'ABC-0002' })).expect(200);
      await deliver(invoiceEvent(customer, { type: 'invoice.finalized', created: T, id, status: 'open', number: 'ABC-0002' })).expect(200);
      await deliver(invoiceEvent(customer, { type: 'invoice.created', created: T - 10, id: `${id}_old`, status: 'draft', number: 'ABC-0001', amount: 100 })).expect(200);
      // An unrelated event type is acknowledged and ignored.
      await deliver({ id: `evt_other_${t.tenantId}`, object: 'event', type: 'charge.succeeded', created: T, data: { object: { id: 'ch_1', object: 'charge' } } }).expect(200, { received: true, duplicate: false });
      const list = (await request(app).get('/api/v1/billing/invoices').set(bearer(t.owner.accessToken)).query({ limit: 1 }).expect(200)).body;
      expect(list.pagination).to.include({ total: 2, limit: 1, has_more: true });
      // Same created time: the id breaks the tie, descending.
      expect(list.data).to.deep.equal([
        {
          id: `${id}_old`,
          number: 'ABC-0001',
          status: 'draft',
          amount: 100,
          currency: 'eur',
          period_start: new Date(1_790_000_000 * 1000).toISOString(),
          period_end: new Date((1_790_000_000 + 30 * DAY_S) * 1000).toISOString(),
          hosted_invoice_url: `https://invoice.stripe.test/i/${id}_old`,
          pdf_url: `https://pay.stripe.test/invoice/${id}_old/pdf`,
          created_at: new Date(1_790_000_000 * 1000).toISOString(),
        },
      ]);
      const all = (await request(app).get('/api/v1/billing/invoices').set(bearer(t.owner.accessToken)).expect(200)).body.data;
      expect(all.find((i: { id: string }) => i.id === id)).to.include({ status: 'paid', number: 'ABC-0002', amount: 4900 });
      // Another tenant sees none of them.
      const other = await createTenant();
      expect((await request(app).get('/api/v1/billing/invoices').set(bearer(other.owner.accessToken)).expect(200)).body.data).to.deep.equal([]);
    });
  });

  describe('plan limits', () => {
    async function widgetSession(t: TestTenant) {
      const auth = bearer(t.owner.accessToken);
      const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Site' }).expect(201)).body;
      await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.billing.example' }).expect(201);
      const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
      return { Authorization: `Bearer ${session.body.visitor_token}`, Origin: SITE };
    }
    const usageOf = async (t: TestTenant) => (await request(app).get('/api/v1/billing/usage').set(bearer(t.owner.accessToken)).expect(200)).body;

    it('seats: a full seat past the limit is 402 naming seats (add and seat change); lite seats are free; lifted by an upgrade event, back after cancel', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const add = (seat: 'full' | 'lite') => request(app).post(`/api/v1/tenants/${t.tenantId}/members`).set(auth).send({ email: uniqueEmail(), role: 'agent', seat });
      await add('full').expect(201);
      const refused = expectProblem(await add('full'), 402, 'ERR_PLAN_LIMIT');
      expect(refused.detail).to.match(/^Plan limit reached: seats \(2 of 2 full seats/);
      const lite = (await add('lite').expect(201)).body;
      expectProblem(await request(app).patch(`/api/v1/tenants/${t.tenantId}/members/${lite.user_id}`).set(auth).send({ seat: 'full' }), 402, 'ERR_PLAN_LIMIT');
      // The refused member was not added, so a duplicate check does not hide behind the limit either.
      expect(await usageOf(t)).to.include({ seats_used: 2, seats_limit: 2 });

      const customer = await customerOf(t);
      const T = NOW_S;
      await deliver(subscriptionEvent(customer, { type: 'customer.subscription.created', created: T, price: 'price_pro', quantity: 4 })).expect(200);
      await add('full').expect(201);
      await request(app).patch(`/api/v1/tenants/${t.tenantId}/members/${lite.user_id}`).set(auth).send({ seat: 'full' }).expect(200);
      expect(expectProblem(await add('full'), 402, 'ERR_PLAN_LIMIT').detail).to.contain('4 of 4');
      await deliver(subscriptionEvent(customer, { type: 'customer.subscription.deleted', created: T + 1, status: 'canceled', price: 'price_pro', quantity: 4 })).expect(200);
      expect(expectProblem(await add('full'), 402, 'ERR_PLAN_LIMIT').detail).to.contain('4 of 2');
    });

    it('conversations: past the monthly limit the agent API and the widget start are 402 and nothing is stored; ongoing chats go on; an upgrade lifts it, past_due keeps it lifted, cancel brings it back', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const visitor = await widgetSession(t);
      const started = await request(app).post('/api/v1/widget/conversations').set(visitor).send({ content: 'First' }).expect(201);
      await request(app).post('/api/v1/conversations').set(auth).send({ visitor_id: await createVisitor(t) }).expect(201);
      const agentRefused = expectProblem(await request(app).post('/api/v1/conversations').set(auth).send({ visitor_id: await createVisitor(t), message: 'Hi' }), 402, 'ERR_PLAN_LIMIT');
      expect(agentRefused.detail).to.match(/^Plan limit reached: conversations \(2 of 2/);
      const widgetRefused = expectProblem(await request(app).post('/api/v1/widget/conversations').set(visitor).send({ content: 'Are you there?' }), 402, 'ERR_PLAN_LIMIT');
      expect(widgetRefused.detail).to.contain('conversations');
      expect(await usageOf(t)).to.include({ conversations: 2, conversations_limit: 2, messages: 1 });
      // The visitor's ongoing conversation is not a new one.
      await request(app).post(`/api/v1/widget/conversations/${started.body.id}/messages`).set(visitor).send({ content: 'Still here' }).expect(201);

      const customer = await customerOf(t);
      const T = NOW_S;
      await deliver(subscriptionEvent(customer, { type: 'customer.subscription.created', created: T, price: 'price_pro', quantity: 3 })).expect(200);
      await request(app).post('/api/v1/widget/conversations').set(visitor).send({ content: 'Are you there?' }).expect(201);
      await deliver(subscriptionEvent(customer, { created: T + 1, status: 'past_due', price: 'price_pro', quantity: 3 })).expect(200);
      expect(await subscriptionOf(t)).to.include({ plan: 'pro', status: 'past_due' });
      await request(app).post('/api/v1/conversations').set(auth).send({ visitor_id: await createVisitor(t) }).expect(201);
      const usage = await usageOf(t);
      expect(usage).to.include({ conversations: 4, conversations_limit: null, seats_limit: 3 });
      expect(new Date(usage.period_start).getTime()).to.equal((T - DAY_S) * 1000);
      await deliver(subscriptionEvent(customer, { created: T + 2, status: 'unpaid', price: 'price_pro', quantity: 3 })).expect(200);
      expect(await subscriptionOf(t)).to.include({ plan: 'free', status: 'unpaid' });
      expectProblem(await request(app).post('/api/v1/widget/conversations').set(visitor).send({ content: 'Hello?' }), 402, 'ERR_PLAN_LIMIT');
    });

    it('storage: assertStorageAvailable refuses bytes past the plan, with Stripe only', async () => {
      const { database, deps } = await getHarness();
      const t = await createTenant();
      const saas = new BillingService({ database, logger: deps.logger, appUrl: 'http://app.test', config: { stripe: { secretKey: 'sk_test', webhookSecret: WEBHOOK_SECRET }, plans: PLANS }, stripe });
      await database.withTenant(t.tenantId, (trx) => saas.assertStorageAvailable(trx, t.tenantId, 1000));
      const refused = await database.withTenant(t.tenantId, (trx) => saas.assertStorageAvailable(trx, t.tenantId, 1001)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).to.be.instanceOf(AppError);
      expect(refused).to.include({ code: 'ERR_PLAN_LIMIT' });
      expect((refused as AppError).detail).to.match(/^Plan limit reached: storage/);
      const selfHosted = new BillingService({ database, logger: deps.logger, appUrl: 'http://app.test', config: { stripe: undefined, plans: PLANS } });
      await database.withTenant(t.tenantId, (trx) => selfHosted.assertStorageAvailable(trx, t.tenantId, Number.MAX_SAFE_INTEGER));
    });
  });

  describe('configuration', () => {
    it('self-hosted by default with the default plans; BILLING_PLANS merges over them; bad plans and a key without its webhook secret are named', () => {
      const bare = loadConfig({});
      expect(bare.billing.stripe).to.equal(undefined);
      expect(bare.billing.plans.map((p) => p.id)).to.deep.equal(['free', 'starter', 'pro', 'business']);
      const custom = loadConfig({
        STRIPE_SECRET_KEY: 'sk_live_x',
        STRIPE_WEBHOOK_SECRET: 'whsec_x',
        BILLING_PLANS: JSON.stringify({ pro: { stripe_price_id: 'price_9', seats: 50 }, business: false, team: { name: 'Team', seats: 8 } }),
      });
      expect(custom.billing.stripe).to.deep.equal({ secretKey: 'sk_live_x', webhookSecret: 'whsec_x' });
      expect(custom.billing.plans.find((p) => p.id === 'pro')).to.deep.equal({ id: 'pro', name: 'Pro', stripePriceId: 'price_9', seats: 50, conversationsPerPeriod: 10_000, storageBytes: 50 * 1024 ** 3 });
      expect(custom.billing.plans.map((p) => p.id)).to.deep.equal(['free', 'starter', 'pro', 'team']);
      const problemsOf = (env: Record<string, string>) => {
        try {
          loadConfig(env);
        } catch (e) {
          if (e instanceof ConfigError) return e.problems;
          throw e;
        }
        return {};
      };
      expect(problemsOf({ STRIPE_SECRET_KEY: 'sk_x' })).to.have.keys('STRIPE_WEBHOOK_SECRET');
      expect(problemsOf({ BILLING_PLANS: 'not json' })).to.deep.equal({ BILLING_PLANS: 'must be a JSON object of plans by id' });
      expect(problemsOf({ BILLING_PLANS: '{"pro":{"seats":-1}}' }).BILLING_PLANS).to.contain('seats');
      expect(problemsOf({ BILLING_PLANS: '{"pro":{"price":"p"}}' }).BILLING_PLANS).to.contain('unknown price');
      expect(problemsOf({ BILLING_PLANS: '{"free":false}' }).BILLING_PLANS).to.contain('free plan cannot be removed');
    });
  });
});
