import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import type { Webhook } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { inTenantTransaction } from '../events/outbox.ts';
import { conflict, invalidInput, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { pageOf } from '../shared/pagination.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './webhook.repository.ts';
import { addressRefusal } from '../delivery/transport.ts';

type S = components['schemas'];

/** After a rotation the old secret keeps signing beside the new one this long. */
export const SECRET_OVERLAP_MS = 24 * 60 * 60_000;

export interface WebhookPolicy {
  /** Loopback, private, link-local and metadata addresses allowed (tests, self-hosted networks). */
  allowPrivate: boolean;
  /** Production: only https:// endpoints. */
  requireHttps: boolean;
}

/** A `whsec_` secret as the standardwebhooks libraries take it: 24 random bytes, base64. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export const toWebhookDto = (w: Webhook): S['Webhook'] => ({
  id: w.id,
  url: w.url,
  events: w.events as S['WebhookEventType'][],
  description: w.description,
  enabled: w.enabled,
  disabled_reason: w.disabled_reason,
  disabled_at: w.disabled_at?.toISOString() ?? null,
  created_at: w.created_at.toISOString(),
  updated_at: w.updated_at.toISOString(),
});

type DeliveryRow = Awaited<ReturnType<typeof repo.listDeliveries>>['rows'][number];

const toDeliveryDto = (d: DeliveryRow): S['WebhookDelivery'] => ({
  id: d.id,
  webhook_id: d.webhook_id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  next_attempt_at: d.next_attempt_at?.toISOString() ?? null,
  created_at: d.created_at.toISOString(),
  delivered_at: d.delivered_at?.toISOString() ?? null,
});

/**
 * Whether deliveries may go to this URL. A host that is an address is judged here; a name is judged at
 * each delivery on what it then resolves to (it may resolve elsewhere by then).
 */
export function urlRefusal(url: string, policy: WebhookPolicy): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an http:// or https:// URL';
  if (policy.requireHttps && parsed.protocol !== 'https:') return 'must be an https:// URL';
  if (parsed.username || parsed.password) return 'must not carry credentials';
  if (!policy.allowPrivate) {
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    const refusal = addressRefusal(host);
    if (refusal) return `must not point at a loopback, private, link-local or metadata address (${refusal})`;
    if (host === 'localhost' || host.endsWith('.localhost')) return 'must not point at localhost';
  }
  return undefined;
}

export class WebhookService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #policy: WebhookPolicy;
  readonly #dueListeners = new Set<() => void>();

  constructor(deps: { database: Database; bus: EventBus; policy: WebhookPolicy }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#policy = deps.policy;
  }

  readonly #changeListeners = new Set<() => void>();

  /** Told after an endpoint was created or enabled through this instance (the dispatcher's TenantInterest). */
  onEndpointsChanged(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Told when a delivery was queued by hand (redelivery): the dispatcher of this instance sends it at once. */
  onDeliveryDue(listener: () => void): () => void {
    this.#dueListeners.add(listener);
    return () => this.#dueListeners.delete(listener);
  }

  #checkUrl(url: string) {
    const refusal = urlRefusal(url, this.#policy);
    if (refusal) throw invalidInput({ field: 'url', message: refusal });
  }

  async list(principal: Principal, page: { limit: number; offset: number }): Promise<S['WebhookList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listWebhooks(trx, page));
    return { data: rows.map(toWebhookDto), pagination: pageOf(total, page, rows.length) };
  }

  async get(principal: Principal, id: string): Promise<S['Webhook']> {
    const webhook = await this.#database.withTenant(principal.tenantId, (trx) => repo.findWebhook(trx, id));
    if (!webhook) throw notFound('Webhook');
    return toWebhookDto(webhook);
  }

  async create(principal: Principal, input: S['WebhookCreate']): Promise<S['WebhookWithSecret']> {
    this.#checkUrl(input.url);
    const webhook = await this.#database.withTenant(principal.tenantId, (trx) =>
      repo.insertWebhook(trx, {
        id: newId('webhook'),
        tenant_id: principal.tenantId,
        url: input.url,
        events: normaliseEvents(input.events),
        description: input.description ?? '',
        secret: newWebhookSecret(),
        now: new Date(),
      }),
    );
    for (const listener of this.#changeListeners) listener();
    return { ...toWebhookDto(webhook), secret: webhook.secret };
  }

  async update(principal: Principal, id: string, input: S['WebhookUpdate']): Promise<S['Webhook']> {
    if (input.url !== undefined) this.#checkUrl(input.url);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findWebhook(trx, id, { lock: true });
      if (!current) throw notFound('Webhook');
      const enabling = input.enabled === true && !current.enabled;
      const disabling = input.enabled === false && current.enabled;
      const updated = await repo.updateWebhook(
        trx,
        id,
        {
          ...(input.url !== undefined ? { url: input.url } : {}),
          ...(input.events !== undefined ? { events: normaliseEvents(input.events) } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          // Enabling starts afresh: no reason, no failure streak.
          ...(enabling ? { enabled: true, disabled_reason: null, disabled_at: null, failing_since: null } : {}),
          ...(disabling ? { enabled: false, disabled_reason: 'manual' as const, disabled_at: new Date() } : {}),
        },
        new Date(),
      );
      return toWebhookDto(updated);
    }).then((dto) => {
      if (input.enabled === true) {
        for (const listener of this.#changeListeners) listener();
        this.#announceDue();
      }
      return dto;
    });
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteWebhook(trx, id));
    if (!deleted) throw notFound('Webhook');
    return { id, deleted: true };
  }

  async rotateSecret(principal: Principal, id: string): Promise<S['WebhookSecret']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findWebhook(trx, id, { lock: true });
      if (!current) throw notFound('Webhook');
      const now = new Date();
      const expiresAt = new Date(now.getTime() + SECRET_OVERLAP_MS);
      const secret = newWebhookSecret();
      await repo.updateWebhook(trx, id, { secret, previous_secret: current.secret, previous_secret_expires_at: expiresAt }, now);
      return { secret, previous_secret_expires_at: expiresAt.toISOString() };
    });
  }

  /** Writes a webhook.test event for this endpoint only; the dispatcher delivers it like any other. */
  async test(principal: Principal, id: string): Promise<S['WebhookTestResult']> {
    return inTenantTransaction(this.#database, this.#bus, principal.tenantId, async (trx, emit) => {
      const webhook = await repo.findWebhook(trx, id);
      if (!webhook) throw notFound('Webhook');
      if (!webhook.enabled) throw conflict('The webhook is disabled; enable it first');
      const eventId = await emit('webhook.test', { webhook_id: id });
      return { event_id: eventId };
    });
  }

  async listDeliveries(
    principal: Principal,
    webhookId: string,
    filter: { status?: S['WebhookDeliveryStatus'] | undefined },
    page: { limit: number; offset: number },
  ): Promise<S['WebhookDeliveryList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findWebhook(trx, webhookId))) throw notFound('Webhook');
      return repo.listDeliveries(trx, webhookId, filter, page);
    });
    return { data: rows.map(toDeliveryDto), pagination: pageOf(total, page, rows.length) };
  }

  async redeliver(principal: Principal, webhookId: string, deliveryId: string): Promise<S['WebhookDelivery']> {
    const delivery = await this.#database.withTenant(principal.tenantId, async (trx) => {
      const webhook = await repo.findWebhook(trx, webhookId);
      if (!webhook) throw notFound('Webhook');
      const requeued = await repo.requeueDelivery(trx, webhookId, deliveryId);
      if (!requeued) throw notFound('Delivery');
      if (!webhook.enabled) throw conflict('The webhook is disabled; enable it first');
      return requeued;
    });
    this.#announceDue();
    return toDeliveryDto(delivery);
  }

  #announceDue() {
    for (const listener of this.#dueListeners) listener();
  }
}

/** `*` stands for every type: kept alone, so a later type is included without a change here. */
const normaliseEvents = (events: string[]) => (events.includes('*') ? ['*'] : [...events]);
