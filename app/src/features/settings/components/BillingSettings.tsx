import { useQuery } from '@tanstack/react-query';
import { FormError } from '../../../components/Form.tsx';
import { $api, fetchClient } from '../../../lib/api.ts';
import { useAction, when } from '../api.ts';

const limit = (used: number, max: number | null | undefined, unit = (n: number) => String(n)) => `${unit(used)} of ${max === null || max === undefined ? 'unlimited' : unit(max)}`;
const bytes = (n: number) => (n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(1)} GB` : `${(n / 1024 ** 2).toFixed(1)} MB`);

export default function BillingSettings() {
  const subscription = useQuery($api.queryOptions('get', '/v1/billing/subscription'));
  const usage = useQuery($api.queryOptions('get', '/v1/billing/usage'));
  const invoices = useQuery($api.queryOptions('get', '/v1/billing/invoices', { params: { query: { limit: 24 } } }));
  const here = `${location.origin}${import.meta.env.BASE_URL}settings/billing`;
  const checkout = useAction((plan: string) => fetchClient.POST('/v1/billing/checkout', { body: { plan, success_url: here, cancel_url: here } }), [], (s) => location.assign(s.url));
  const portal = useAction(() => fetchClient.POST('/v1/billing/portal', { body: { return_url: here } }), [], (s) => location.assign(s.url));
  const s = subscription.data;
  const u = usage.data;
  const stripe = s?.provider === 'stripe';
  return (
    <>
      <section aria-labelledby="plan-heading">
        <h2 id="plan-heading">Plan</h2>
        {s && (
          <>
            <p>
              <strong>{s.plan_name}</strong> · {s.status === 'none' ? 'no subscription' : s.status}
              {s.current_period_end && ` · renews ${when(s.current_period_end)}`}
              {s.cancel_at_period_end && ' · ends at the close of this period'}
            </p>
            {!stripe && <p className="notice">This service is self-hosted without a payment provider: there is nothing to pay, and the limits below are the operator's.</p>}
            {stripe && (
              <div className="buttons">
                {s.status === 'none' || s.status === 'canceled' ? (
                  <button type="button" className="primary" onClick={() => checkout.mutate('pro')}>
                    Subscribe
                  </button>
                ) : (
                  <button type="button" onClick={() => portal.mutate(undefined)}>
                    Manage billing
                  </button>
                )}
              </div>
            )}
            <FormError error={checkout.error ?? portal.error} fields={[]} />
          </>
        )}
      </section>
      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading">Usage this period</h2>
        {u && (
          <dl className="facts">
            <dt>Seats</dt>
            <dd>{limit(u.seats_used, u.seats_limit)}</dd>
            <dt>Conversations</dt>
            <dd>{limit(u.conversations, u.conversations_limit)}</dd>
            <dt>Messages</dt>
            <dd>{u.messages}</dd>
            <dt>Storage</dt>
            <dd>{limit(u.storage_bytes, u.storage_limit_bytes, bytes)}</dd>
          </dl>
        )}
      </section>
      <section aria-labelledby="invoices-heading">
        <h2 id="invoices-heading">Invoices</h2>
        {(invoices.data?.data ?? []).length === 0 ? (
          <p className="muted">No invoices.</p>
        ) : (
          <ul className="rows">
            {invoices.data!.data.map((i) => (
              <li key={i.id}>
                <span>{i.number ?? i.id}</span> <span>{(i.amount / 100).toFixed(2)} {i.currency.toUpperCase()}</span> <span>{i.status}</span>
                {i.hosted_invoice_url && <a href={i.hosted_invoice_url}>View</a>}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
