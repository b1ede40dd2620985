import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { WebhookService } from './webhook.service.ts';

type WebhookOps =
  | 'listWebhooks'
  | 'createWebhook'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'testWebhook'
  | 'listWebhookDeliveries'
  | 'redeliverWebhookDelivery';

const pageOf = (query: { limit?: number; offset?: number }) => ({ limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 });

export const webhookHandlers = (webhooks: WebhookService): Pick<Handlers, WebhookOps> => ({
  listWebhooks: async ({ principal, query }) => ({ status: 200, body: await webhooks.list(requirePrincipal(principal), pageOf(query)) }),
  createWebhook: async ({ principal, body }) => ({ status: 201, body: await webhooks.create(requirePrincipal(principal), body) }),
  getWebhook: async ({ principal, params }) => ({ status: 200, body: await webhooks.get(requirePrincipal(principal), params.id) }),
  updateWebhook: async ({ principal, params, body }) => ({ status: 200, body: await webhooks.update(requirePrincipal(principal), params.id, body) }),
  deleteWebhook: async ({ principal, params }) => ({ status: 200, body: await webhooks.remove(requirePrincipal(principal), params.id) }),
  rotateWebhookSecret: async ({ principal, params }) => ({ status: 200, body: await webhooks.rotateSecret(requirePrincipal(principal), params.id) }),
  testWebhook: async ({ principal, params }) => ({ status: 202, body: await webhooks.test(requirePrincipal(principal), params.id) }),
  listWebhookDeliveries: async ({ principal, params, query }) => ({
    status: 200,
    body: await webhooks.listDeliveries(requirePrincipal(principal), params.id, { status: query.status }, pageOf(query)),
  }),
  redeliverWebhookDelivery: async ({ principal, params }) => ({
    status: 202,
    body: await webhooks.redeliver(requirePrincipal(principal), params.id, params.delivery_id),
  }),
});
