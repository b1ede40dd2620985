import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Widget, WidgetDomain } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import { conflict, invalidInput, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { mergePatch } from '../shared/merge.ts';
import { pageOf } from '../shared/pagination.ts';
import { normaliseDomain } from './domain.ts';
import * as repo from './widget.repository.ts';
import { botInTransaction } from '../bots/bot.service.ts';

type S = components['schemas'];

export const toWidgetDto = (w: Widget): S['Widget'] => ({
  id: w.id,
  name: w.name,
  settings: w.settings as S['WidgetSettings'],
  identity_verification: { required: w.identity_required },
  created_at: w.created_at.toISOString(),
  updated_at: w.updated_at.toISOString(),
});

const toDomainDto = (d: WidgetDomain): S['Domain'] => ({ id: d.id, widget_id: d.widget_id, domain: d.domain, created_at: d.created_at.toISOString() });

const newSecret = () => randomBytes(32).toString('hex');

/** settings.bot_id must name an enabled bot of this tenant (another tenant's is as unknown as none). */
async function checkBot(trx: Tx, settings: Record<string, unknown> | undefined): Promise<void> {
  const botId = settings?.bot_id;
  if (typeof botId !== 'string') return;
  const bot = await botInTransaction(trx, botId);
  if (!bot) throw invalidInput({ field: 'settings/bot_id', message: 'names no bot of this account' });
  if (!bot.enabled) throw invalidInput({ field: 'settings/bot_id', message: 'names a disabled bot' });
}

export class WidgetService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, page: { limit: number; offset: number }): Promise<S['WidgetList']> {
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listWidgets(trx, page));
    return { data: rows.map(toWidgetDto), pagination: pageOf(total, page, rows.length) };
  }

  async get(principal: Principal, id: string): Promise<S['Widget']> {
    const widget = await this.#database.withTenant(principal.tenantId, (trx) => repo.findWidget(trx, id));
    if (!widget) throw notFound('Widget');
    return toWidgetDto(widget);
  }

  async create(principal: Principal, input: S['WidgetCreate']): Promise<S['WidgetWithSecret']> {
    const widget = await this.#database.withTenant(principal.tenantId, async (trx) => {
      await checkBot(trx, input.settings);
      return repo.insertWidget(trx, {
        id: newId('widget'),
        tenant_id: principal.tenantId,
        name: input.name,
        settings: input.settings ?? {},
        identity_secret: newSecret(),
        identity_required: input.identity_required ?? false,
        now: new Date(),
      });
    });
    return { ...toWidgetDto(widget), identity_secret: widget.identity_secret };
  }

  async update(principal: Principal, id: string, input: S['WidgetUpdate']): Promise<S['Widget']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const current = await repo.findWidget(trx, id, { lock: true });
      if (!current) throw notFound('Widget');
      const settings = input.settings ? mergePatch(current.settings, input.settings) : undefined;
      if (input.settings?.bot_id) await checkBot(trx, settings);
      const updated = await repo.updateWidget(
        trx,
        id,
        {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(settings ? { settings } : {}),
          ...(input.identity_required !== undefined ? { identity_required: input.identity_required } : {}),
        },
        new Date(),
      );
      return toWidgetDto(updated);
    });
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteWidget(trx, id));
    if (!deleted) throw notFound('Widget');
    return { id, deleted: true };
  }

  async rotateSecret(principal: Principal, id: string): Promise<S['IdentitySecret']> {
    const secret = newSecret();
    await this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findWidget(trx, id, { lock: true }))) throw notFound('Widget');
      await repo.updateWidget(trx, id, { identity_secret: secret }, new Date());
    });
    return { identity_secret: secret };
  }

  async listDomains(principal: Principal, widgetId: string, page: { limit: number; offset: number }): Promise<S['DomainList']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.findWidget(trx, widgetId))) throw notFound('Widget');
      const { rows, total } = await repo.listDomains(trx, widgetId, page);
      return { data: rows.map(toDomainDto), pagination: pageOf(total, page, rows.length) };
    });
  }

  async addDomain(principal: Principal, input: S['DomainCreate']): Promise<S['Domain']> {
    const domain = normaliseDomain(input.domain);
    const row = await this.#database
      .withTenant(principal.tenantId, async (trx) => {
        if (!(await repo.findWidget(trx, input.widget_id, { lock: true }))) throw notFound('Widget');
        return repo.insertDomain(trx, { id: newId('domain'), tenant_id: principal.tenantId, widget_id: input.widget_id, domain });
      })
      .catch((err) => {
        if (isUniqueViolation(err)) throw conflict(`The widget already allows ${domain}`);
        throw err;
      });
    return toDomainDto(row);
  }

  async removeDomain(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteDomain(trx, id));
    if (!deleted) throw notFound('Domain');
    return { id, deleted: true };
  }
}
