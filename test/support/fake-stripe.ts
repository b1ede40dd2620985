import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export interface StripeCall {
  method: string;
  path: string;
  form: Record<string, string>;
  idempotencyKey: string | undefined;
}

/** An HTTP server on loopback that answers like Stripe's API for what billing calls, and records each call. */
export class FakeStripe {
  readonly calls: StripeCall[] = [];
  #server: Server | undefined;
  #seq = 0;
  // Stripe answers a repeated idempotency key with its first answer.
  readonly #byKey = new Map<string, unknown>();

  async start(): Promise<number> {
    this.#server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const form = Object.fromEntries(new URLSearchParams(body));
        const key = req.headers['idempotency-key'] as string | undefined;
        const path = (req.url ?? '').split('?')[0]!;
        this.calls.push({ method: req.method ?? '', path, form, idempotencyKey: key });
        let answer: unknown = key ? this.#byKey.get(`${path} ${key}`) : undefined;
        if (!answer) {
          answer = this.#answer(req.method ?? '', path, form);
          if (key) this.#byKey.set(`${path} ${key}`, answer);
        }
        const status = (answer as { error?: unknown }).error ? 404 : 200;
        res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': `req_${++this.#seq}` });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return (this.#server!.address() as AddressInfo).port;
  }

  #answer(method: string, path: string, form: Record<string, string>): unknown {
    // Unique across runs too, like Stripe's: a PostgreSQL test database keeps earlier runs' customers.
    const n = `${++this.#seq}${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    if (method === 'POST' && path === '/v1/customers') {
      return { id: `cus_test${n}`, object: 'customer', metadata: { tenant_id: form['metadata[tenant_id]'] } };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      return { id: `cs_test_${n}`, object: 'checkout.session', mode: form.mode, customer: form.customer, url: `https://checkout.stripe.test/c/pay/cs_test_${n}` };
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      return { id: `bps_${n}`, object: 'billing_portal.session', customer: form.customer, return_url: form.return_url, url: `https://billing.stripe.test/p/session/test_${n}` };
    }
    return { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` } };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}

/** A Stripe client of the library the service uses, talking to `fake` (no retries: a test sees the first answer). */
export function stripeClientOf(port: number, secretKey = 'sk_test_fake'): Stripe {
  return new Stripe(secretKey, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 });
}
