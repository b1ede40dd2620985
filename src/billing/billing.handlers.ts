import express, { type RequestHandler } from 'express';
import type { Handlers } from '../http/contract.ts';
import { AppError } from '../shared/errors.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal, requireUser } from '../shared/principal.ts';
import type { BillingService } from './billing.service.ts';

type BillingOps = 'getBillingSubscription' | 'getBillingUsage' | 'listBillingInvoices' | 'createBillingCheckout' | 'createBillingPortal' | 'receiveBillingWebhook';

/** Where the webhook's exact bytes are kept (app.ts reads the body raw on that route): the signature is over them. */
export const RAW_BODY = Symbol('rawBody');

export const billingHandlers = (billing: BillingService): Pick<Handlers, BillingOps> => ({
  getBillingSubscription: async ({ principal }) => ({ status: 200, body: await billing.subscription(requirePrincipal(principal)) }),
  getBillingUsage: async ({ principal }) => ({ status: 200, body: await billing.usage(requirePrincipal(principal)) }),
  listBillingInvoices: async ({ principal, query }) => ({
    status: 200,
    body: await billing.invoices(requirePrincipal(principal), { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  createBillingCheckout: async ({ principal, body }) => ({ status: 201, body: await billing.checkout(requireUser(principal), body) }),
  createBillingPortal: async ({ principal, body }) => ({ status: 201, body: await billing.portal(requireUser(principal), body) }),
  receiveBillingWebhook: async ({ req }) => {
    const raw = (req as unknown as Record<symbol, Buffer | undefined>)[RAW_BODY];
    if (!raw) throw new AppError('ERR_INTERNAL', 'The webhook body was not kept raw');
    return { status: 200, body: await billing.receiveWebhook(raw, req.get('stripe-signature') ?? '') };
  },
});

/**
 * Body parsing of the webhook route, mounted before express.json: keeps the exact bytes for the signature
 * and hands the validator the parsed event. A body that is not JSON is left out (the validator refuses it).
 */
export function keepRawBody(limit: number): RequestHandler {
  const raw = express.raw({ type: () => true, limit });
  return (req, res, next) => {
    raw(req, res, (err?: unknown) => {
      if (err) return next(err);
      const bytes = req.body as unknown;
      if (Buffer.isBuffer(bytes)) {
        (req as unknown as Record<symbol, Buffer>)[RAW_BODY] = bytes;
        try {
          req.body = JSON.parse(bytes.toString('utf8'));
        } catch {
          req.body = undefined;
        }
      }
      next();
    });
  };
}
