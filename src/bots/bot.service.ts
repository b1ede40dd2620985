import type { components } from '../../generated/api.ts';
import { createBotKey, rotateBotKey } from '../api-keys/api-key.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Bot, BotState } from '../db/schema.ts';
import { AppError, forbidden, invalidInput, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { pageOf } from '../shared/pagination.ts';
import type { Principal, UserPrincipal } from '../shared/principal.ts';
import { SECRET_OVERLAP_MS, type WebhookPolicy, newWebhookSecret, urlRefusal } from '../webhooks/webhook.service.ts';
import * as repo from './bot.repository.ts';
import type { SecretBox } from '../shared/secret-box.ts';

type S = components['schemas'];

export const DEFAULT_LLM_TIMEOUT_MS = 5000;

/** What an `llm` bot keeps in its settings; api_key is stored sealed (src/shared/secret-box.ts) and never answered. */
export interface LlmSettings {
  base_url: string;
  model: string;
  api_key: string;
  system_prompt?: string;
  timeout_ms?: number;
}

export const llmSettingsOf = (bot: Pick<Bot, 'kind' | 'settings'>): LlmSettings | undefined =>
  bot.kind === 'llm' ? ((bot.settings as { llm?: LlmSettings }).llm ?? undefined) : undefined;

export const toBotDto = (b: Bot): S['Bot'] => {
  const llm = llmSettingsOf(b);
  return {
    id: b.id,
    name: b.name,
    kind: b.kind,
    avatar_url: b.avatar_url,
    webhook_url: b.webhook_url,
    enabled: b.enabled,
    handoff_department_id: b.handoff_department_id,
    llm: llm
      ? { base_url: llm.base_url, model: llm.model, system_prompt: llm.system_prompt ?? null, timeout_ms: llm.timeout_ms ?? DEFAULT_LLM_TIMEOUT_MS, api_key_set: Boolean(llm.api_key) }
      : null,
    created_at: b.created_at.toISOString(),
    updated_at: b.updated_at.toISOString(),
  };
};

/**
 * A bot's key sees the conversations its bot was given (404 for any other: it learns nothing of them) and
 * acts only in those the bot still holds (403 once handed off). Other callers pass.
 */
export function checkBotAccess(conversation: { bot_id: string | null; bot_state: BotState }, principal: Principal, acting: boolean): void {
  if (principal.kind !== 'api_key' || !principal.botId) return;
  if (conversation.bot_id !== principal.botId) throw notFound('Conversation');
  if (acting && conversation.bot_state !== 'active') throw forbidden('The bot no longer holds this conversation: it was handed off');
}

/** A bot's own key: a third party, which sees what the visitor sees (no internal notes) and writes as they do. */
export const isBotKey = (principal: Principal): boolean => principal.kind === 'api_key' && principal.botId !== undefined;

/** An internal note is the team's: a bot may not write one (its handoff note is the one it leaves them). */
export function checkBotNote(principal: Principal, internal: boolean | undefined): void {
  if (internal && isBotKey(principal)) throw forbidden("A bot's key cannot write internal notes: a bot writes what the visitor sees");
}

const invalidDepartment = () => new AppError('ERR_INVALID_DEPARTMENT', 'The department does not belong to this account');

/** For other features, in their transactions: the bot, if it is this tenant's. */
export const botInTransaction = (trx: Tx, id: string): Promise<Bot | undefined> => repo.findBot(trx, id);

export class BotService {
  readonly #database: Database;
  readonly #policy: WebhookPolicy;
  /** Seals an llm bot's API key before it is stored (the runner opens it to call the provider). */
  readonly #secrets: SecretBox;
  readonly #changeListeners = new Set<() => void>();

  constructor(deps: { database: Database; policy: WebhookPolicy; secrets: SecretBox }) {
    this.#database = deps.database;
    this.#policy = deps.policy;
    this.#secrets = deps.secrets;
  }

  // Bot URLs go where webhooks go, under the same rule.
  #checkUrl(field: string, url: string | undefined | null) {
    if (url === undefined || url === null) return;
    const refusal = urlRefusal(url, this.#policy);
    if (refusal) throw invalidInput({ field, message: refusal });
  }

  async list(principal: Principal, page: { limit: number; offset: number }): Promise<S['BotList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listBots(trx, page));
    return { data: rows.map(toBotDto), pagination: pageOf(total, page, rows.length) };
  }

  /** Told after a bot was created through this instance (the runner's TenantInterest). */
  onBotsChanged(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  async get(principal: Principal, id: string): Promise<S['Bot']> {
    const bot = await this.#database.withTenant(principal.tenantId, (trx) => repo.findBot(trx, id));
    if (!bot) throw notFound('Bot');
    return toBotDto(bot);
  }

  async create(user: UserPrincipal, input: S['BotCreate']): Promise<S['BotWithSecrets']> {
    const kind = input.kind ?? 'webhook';
    if (kind === 'webhook' && !input.webhook_url) throw invalidInput({ field: 'webhook_url', message: 'is required for a webhook bot' });
    if (kind === 'llm' && !input.llm) throw invalidInput({ field: 'llm', message: 'is required for an llm bot' });
    if (kind !== 'llm' && input.llm) throw invalidInput({ field: 'llm', message: 'is only for an llm bot' });
    this.#checkUrl('webhook_url', input.webhook_url);
    this.#checkUrl('avatar_url', input.avatar_url);
    this.#checkUrl('llm/base_url', input.llm?.base_url);
    const created = await this.#database.withTenant(user.tenantId, async (trx) => {
      if (input.handoff_department_id && !(await repo.departmentExists(trx, input.handoff_department_id))) throw invalidDepartment();
      const bot = await repo.insertBot(trx, {
        id: newId('bot'),
        tenant_id: user.tenantId,
        name: input.name,
        kind,
        avatar_url: input.avatar_url ?? null,
        webhook_url: input.webhook_url ?? null,
        enabled: input.enabled ?? true,
        secret: newWebhookSecret(),
        handoff_department_id: input.handoff_department_id ?? null,
        settings: input.llm ? { llm: { ...input.llm, api_key: this.#secrets.seal(input.llm.api_key) } } : {},
        now: new Date(),
      });
      const apiKey = await createBotKey(trx, bot, user.userId);
      return { ...toBotDto(bot), api_key: apiKey, secret: bot.secret };
    });
    for (const listener of this.#changeListeners) listener();
    return created;
  }

  async update(principal: Principal, id: string, input: S['BotUpdate']): Promise<S['Bot']> {
    this.#checkUrl('webhook_url', input.webhook_url);
    this.#checkUrl('avatar_url', input.avatar_url);
    this.#checkUrl('llm/base_url', input.llm?.base_url);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findBot(trx, id, { lock: true });
      if (!current) throw notFound('Bot');
      if (input.llm && current.kind !== 'llm') throw invalidInput({ field: 'llm', message: 'is only for an llm bot' });
      if (input.handoff_department_id && !(await repo.departmentExists(trx, input.handoff_department_id))) throw invalidDepartment();
      const llm = input.llm
        ? { ...llmSettingsOf(current)!, ...input.llm, ...(input.llm.api_key !== undefined ? { api_key: this.#secrets.seal(input.llm.api_key) } : {}) }
        : undefined;
      const updated = await repo.updateBot(
        trx,
        id,
        {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.avatar_url !== undefined ? { avatar_url: input.avatar_url } : {}),
          ...(input.webhook_url !== undefined ? { webhook_url: input.webhook_url } : {}),
          ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
          ...(input.handoff_department_id !== undefined ? { handoff_department_id: input.handoff_department_id } : {}),
          ...(llm ? { settings: { ...current.settings, llm } } : {}),
        },
        new Date(),
      );
      return toBotDto(updated);
    });
  }

  /** A new API key for the bot, answered once; the old one stops working at once. */
  async rotateKey(principal: Principal, id: string): Promise<S['BotKey']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findBot(trx, id, { lock: true }))) throw notFound('Bot');
      const apiKey = await rotateBotKey(trx, id);
      if (!apiKey) throw notFound('Bot');
      return { api_key: apiKey };
    });
  }

  /** A new signing secret; the old one signs beside it for SECRET_OVERLAP_MS, as a webhook's does. */
  async rotateSecret(principal: Principal, id: string): Promise<S['WebhookSecret']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findBot(trx, id, { lock: true });
      if (!current) throw notFound('Bot');
      const now = new Date();
      const expiresAt = new Date(now.getTime() + SECRET_OVERLAP_MS);
      const secret = newWebhookSecret();
      await repo.updateBot(trx, id, { secret, previous_secret: current.secret, previous_secret_expires_at: expiresAt }, now);
      return { secret, previous_secret_expires_at: expiresAt.toISOString() };
    });
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteBot(trx, id, new Date()));
    if (!deleted) throw notFound('Bot');
    return { id, deleted: true };
  }
}
