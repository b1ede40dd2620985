// Plans are configuration, not data: an installation names its plans, their Stripe prices and limits
// (docs/billing.md). `null` is unlimited.

export interface Plan {
  id: string;
  name: string;
  /** The Stripe price a Checkout session subscribes to; null: not sold through Checkout. */
  stripePriceId: string | null;
  /** Full seats allowed (a subscription may buy fewer: its quantity is the limit then). */
  seats: number | null;
  conversationsPerPeriod: number | null;
  storageBytes: number | null;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Every tenant's plan when no payment provider is configured: nothing is sold, and by default nothing is
 * limited. BILLING_PLANS may give it limits (`{"self_hosted":{"seats":5}}`): limits without Stripe, for an
 * installation that wants them or a tester.
 */
export const SELF_HOSTED_PLAN: Plan = {
  id: 'self_hosted',
  name: 'Self-hosted',
  stripePriceId: null,
  seats: null,
  conversationsPerPeriod: null,
  storageBytes: null,
};

export const FREE_PLAN_ID = 'free';

export const DEFAULT_PLANS: Plan[] = [
  { id: FREE_PLAN_ID, name: 'Free', stripePriceId: null, seats: 2, conversationsPerPeriod: 100, storageBytes: 500 * MiB },
  { id: 'starter', name: 'Starter', stripePriceId: null, seats: 5, conversationsPerPeriod: 1_000, storageBytes: 5 * GiB },
  { id: 'pro', name: 'Pro', stripePriceId: null, seats: 25, conversationsPerPeriod: 10_000, storageBytes: 50 * GiB },
  { id: 'business', name: 'Business', stripePriceId: null, seats: null, conversationsPerPeriod: null, storageBytes: 500 * GiB },
];

const PLAN_ID = /^[a-z0-9_-]{1,40}$/;
const KEYS = ['name', 'stripe_price_id', 'seats', 'conversations_per_period', 'storage_bytes'] as const;

const limitOf = (value: unknown, what: string): number | null => {
  if (value === null) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw new Error(`${what} must be a whole number of at least 0, or null for unlimited`);
};

/**
 * BILLING_PLANS: a JSON object of plans by id, each merged over the default of that id (a new id adds a
 * plan; `false` removes one). Example: {"starter":{"stripe_price_id":"price_123"},"pro":{"stripe_price_id":"price_456","seats":50}}.
 * Throws with the reason on anything malformed.
 */
export function parsePlans(json: string | undefined): Plan[] {
  const plans = new Map(DEFAULT_PLANS.map((p) => [p.id, { ...p }]));
  if (!json) return [...plans.values()];
  let given: unknown;
  try {
    given = JSON.parse(json);
  } catch {
    throw new Error('must be a JSON object of plans by id');
  }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new Error('must be a JSON object of plans by id');
  for (const [id, spec] of Object.entries(given)) {
    if (!PLAN_ID.test(id)) throw new Error(`plan id ${JSON.stringify(id)} must match ${PLAN_ID.source}`);
    if (spec === false) {
      if (id === SELF_HOSTED_PLAN.id) throw new Error('the self_hosted plan cannot be removed (it is the plan without a payment provider)');
      if (id === FREE_PLAN_ID) throw new Error('the free plan cannot be removed (it is the plan without a subscription)');
      plans.delete(id);
      continue;
    }
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new Error(`plan ${id} must be an object`);
    const s = spec as Record<string, unknown>;
    const unknown = Object.keys(s).filter((k) => !(KEYS as readonly string[]).includes(k));
    if (unknown.length > 0) throw new Error(`plan ${id}: unknown ${unknown.join(', ')} (known: ${KEYS.join(', ')})`);
    if (id === SELF_HOSTED_PLAN.id && s.stripe_price_id !== undefined && s.stripe_price_id !== null) {
      throw new Error('plan self_hosted: stripe_price_id must be left out (the plan without a payment provider is never sold)');
    }
    const base = plans.get(id) ?? (id === SELF_HOSTED_PLAN.id ? SELF_HOSTED_PLAN : { id, name: id, stripePriceId: null, seats: null, conversationsPerPeriod: null, storageBytes: null });
    if (s.name !== undefined && (typeof s.name !== 'string' || s.name.length === 0)) throw new Error(`plan ${id}: name must be a string`);
    if (s.stripe_price_id !== undefined && s.stripe_price_id !== null && typeof s.stripe_price_id !== 'string') {
      throw new Error(`plan ${id}: stripe_price_id must be a string`);
    }
    plans.set(id, {
      id,
      name: (s.name as string | undefined) ?? base.name,
      stripePriceId: s.stripe_price_id !== undefined ? (s.stripe_price_id as string | null) : base.stripePriceId,
      seats: s.seats !== undefined ? limitOf(s.seats, `plan ${id}: seats`) : base.seats,
      conversationsPerPeriod:
        s.conversations_per_period !== undefined ? limitOf(s.conversations_per_period, `plan ${id}: conversations_per_period`) : base.conversationsPerPeriod,
      storageBytes: s.storage_bytes !== undefined ? limitOf(s.storage_bytes, `plan ${id}: storage_bytes`) : base.storageBytes,
    });
  }
  return [...plans.values()];
}
