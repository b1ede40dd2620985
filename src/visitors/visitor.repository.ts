import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';

/** Marks visitors as seen now: a live widget socket or a page view keeps them on the online list. */
export async function touchVisitors(trx: Tx, visitorIds: string[], now: Date): Promise<void> {
  if (visitorIds.length === 0) return;
  // One array parameter, however many visitors: a list of them, one parameter each, stops at 65,535.
  await trx.updateTable('visitors').set({ last_seen_at: now }).where(sql<boolean>`id = any(${visitorIds}::text[])`).execute();
}

export async function visitorExists(trx: Tx, id: string): Promise<boolean> {
  return Boolean(await trx.selectFrom('visitors').select('id').where('id', '=', id).executeTakeFirst());
}

/** Visitors seen since `since`, most recent first, each with the page they are on. */
export async function listVisitorsSeenSince(trx: Tx, since: Date, filter: { widgetId?: string | undefined }, page: { limit: number; offset: number }) {
  let q = trx
    .selectFrom('visitors as v')
    .select(['v.id', 'v.name', 'v.email', 'v.contact_id', 'v.widget_id', 'v.last_seen_at'])
    .select(
      sql<{ url: string; title: string | null } | null>`(
        select json_build_object('url', p.url, 'title', p.title) from page_views p
        where p.visitor_id = v.id order by p.viewed_at desc, p.id desc limit 1
      )`.as('current_page'),
    )
    .where('v.last_seen_at', '>=', since);
  if (filter.widgetId) q = q.where('v.widget_id', '=', filter.widgetId);
  return offsetPage(q.orderBy('v.last_seen_at', 'desc').orderBy('v.id', 'desc'), page);
}

export async function findVisitor(trx: Tx, id: string) {
  return trx.selectFrom('visitors').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function recentPagesOf(trx: Tx, visitorId: string, limit: number) {
  return trx
    .selectFrom('page_views')
    .select(['url', 'title', 'referrer', 'viewed_at'])
    .where('visitor_id', '=', visitorId)
    .orderBy('viewed_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export async function conversationsOfVisitor(trx: Tx, visitorId: string, limit: number) {
  return trx
    .selectFrom('conversations')
    .select(['id', 'status', 'last_message_at'])
    .where('visitor_id', '=', visitorId)
    .orderBy('last_activity_at', 'desc')
    .limit(limit)
    .execute();
}

export async function findVisitorIdentity(trx: Tx, id: string) {
  return trx.selectFrom('visitors').select(['id', 'contact_id']).where('id', '=', id).executeTakeFirst();
}

export async function insertVisitor(
  trx: Tx,
  row: { id: string; tenant_id: string; widget_id: string; contact_id: string | null; email: string | null; name: string | null; now: Date },
): Promise<void> {
  const { now, ...values } = row;
  await trx.insertInto('visitors').values({ ...values, last_seen_at: now, created_at: now }).execute();
}

/** A returning visitor's new session: seen now, on this widget, and (when identified) who they are. */
export async function updateVisitorSession(
  trx: Tx,
  id: string,
  patch: { widget_id: string; now: Date; identity?: { contact_id: string; email: string; name?: string | undefined } | undefined },
): Promise<void> {
  const { identity } = patch;
  await trx
    .updateTable('visitors')
    .set({
      last_seen_at: patch.now,
      widget_id: patch.widget_id,
      ...(identity ? { contact_id: identity.contact_id, email: identity.email, ...(identity.name ? { name: identity.name } : {}) } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function insertPageView(
  trx: Tx,
  tenantId: string,
  visitorId: string,
  page: { url: string; title?: string | undefined; referrer?: string | undefined },
  now: Date,
): Promise<void> {
  await trx
    .insertInto('page_views')
    .values({ tenant_id: tenantId, visitor_id: visitorId, url: page.url, title: page.title ?? null, referrer: page.referrer ?? null, viewed_at: now })
    .execute();
}
