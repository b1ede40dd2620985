import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

export async function listWidgets(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('widgets').selectAll().orderBy('created_at').orderBy('id'), page);
}

export async function findWidget(trx: Tx, id: string, options: { lock?: boolean } = {}) {
  let query = trx.selectFrom('widgets').selectAll().where('id', '=', id);
  if (options.lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function insertWidget(
  trx: Tx,
  row: { id: string; tenant_id: string; name: string; settings: Record<string, unknown>; identity_secret: string; identity_required: boolean; now: Date },
) {
  const { now, settings, ...values } = row;
  return trx
    .insertInto('widgets')
    .values({ ...values, settings: JSON.stringify(settings), created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateWidget(
  trx: Tx,
  id: string,
  changes: { name?: string; settings?: Record<string, unknown>; identity_required?: boolean; identity_secret?: string },
  now: Date,
) {
  const { settings, ...rest } = changes;
  return trx
    .updateTable('widgets')
    .set({ ...rest, ...(settings ? { settings: JSON.stringify(settings) } : {}), updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteWidget(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('widgets').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

export async function listDomains(trx: Tx, widgetId: string, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('widget_domains').selectAll().where('widget_id', '=', widgetId).orderBy('domain'), page);
}

export async function insertDomain(trx: Tx, row: { id: string; tenant_id: string; widget_id: string; domain: string }) {
  return trx.insertInto('widget_domains').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function deleteDomain(trx: Tx, id: string): Promise<boolean> {
  return (await trx.deleteFrom('widget_domains').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

/** A widget by id across tenants, with its domains: the public widget API does not know the tenant yet. */
export async function findWidgetWithDomains(trx: Tx, id: string) {
  const widget = await trx.selectFrom('widgets').selectAll().where('id', '=', id).executeTakeFirst();
  if (!widget) return undefined;
  const domains = await trx.selectFrom('widget_domains').select('domain').where('widget_id', '=', id).execute();
  return { widget, domains: domains.map((d) => d.domain) };
}

/** Whether any widget allows this host (CORS preflights carry no widget). */
export async function anyWidgetAllowsHost(trx: Tx, host: string): Promise<boolean> {
  const labels = host.split('.');
  const wildcards = labels.slice(1).map((_, i) => `*.${labels.slice(i + 1).join('.')}`);
  const row = await trx.selectFrom('widget_domains').select('id').where('domain', 'in', [host, ...wildcards]).limit(1).executeTakeFirst();
  return row !== undefined;
}
