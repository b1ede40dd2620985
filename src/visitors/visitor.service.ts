import type { components } from '../../generated/api.ts';
import { contactInTransaction } from '../contacts/contact.service.ts';
import type { Database, Tx } from '../db/database.ts';
import { newId } from '../shared/ids.ts';
import type { Principal } from '../shared/principal.ts';
import { notFound } from '../shared/errors.ts';
import { DEFAULT_PAGE_SIZE, pageOf } from '../shared/pagination.ts';
import * as visitors from './visitor.repository.ts';

type S = components['schemas'];

/** "Currently on a tracked domain": a page view, or a live widget socket (which keeps this fresh), this recently. */
export const ONLINE_WINDOW_MS = 60_000;
const RECENT_PAGES = 20;
const RECENT_CONVERSATIONS = 50;

/** For other features' work inside their transactions: whether the visitor exists in this tenant. */
export const visitorExists = (trx: Tx, id: string): Promise<boolean> => visitors.visitorExists(trx, id);

/** Marks visitors as seen now (a live widget socket keeps them on the online list). */
export const touchVisitors = (trx: Tx, visitorIds: string[], now: Date): Promise<void> => visitors.touchVisitors(trx, visitorIds, now);

/** A returning or new visitor's session: seen now, on this widget, identified when the widget verified them. */
export async function recordVisitorSession(
  trx: Tx,
  session: { returningId: string | undefined; tenantId: string; widgetId: string; contactId: string | null; user?: { email: string; name?: string | undefined } | undefined; page: { url: string; title?: string | undefined; referrer?: string | undefined }; now: Date },
): Promise<string> {
  const { now, user, contactId } = session;
  const existing = session.returningId ? await visitors.findVisitorIdentity(trx, session.returningId) : undefined;
  const id = existing?.id ?? newId('visitor');
  if (existing) {
    const identity = contactId && user ? { contact_id: contactId, email: user.email, name: user.name } : undefined;
    await visitors.updateVisitorSession(trx, id, { widget_id: session.widgetId, now, identity });
  } else {
    await visitors.insertVisitor(trx, { id, tenant_id: session.tenantId, widget_id: session.widgetId, contact_id: contactId, email: user?.email ?? null, name: user?.name ?? null, now });
  }
  await visitors.insertPageView(trx, session.tenantId, id, session.page, now);
  return id;
}

/** A page view of a visitor in session: it keeps them on the online list. */
export async function recordVisitorPage(trx: Tx, tenantId: string, visitorId: string, page: { url: string; title?: string | undefined; referrer?: string | undefined }, now: Date): Promise<void> {
  await visitors.insertPageView(trx, tenantId, visitorId, page, now);
  await visitors.touchVisitors(trx, [visitorId], now);
}

export class VisitorService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { widget_id?: string; limit?: number; offset?: number }): Promise<S['VisitorList']> {
    const page = { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 };
    const since = new Date(Date.now() - ONLINE_WINDOW_MS);
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) =>
      visitors.listVisitorsSeenSince(trx, since, { widgetId: query.widget_id }, page),
    );
    return {
      data: rows.map((v) => ({ ...v, last_seen_at: v.last_seen_at.toISOString() })),
      pagination: pageOf(total, page, rows.length),
    };
  }

  async get(principal: Principal, id: string): Promise<S['Visitor']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const v = await visitors.findVisitor(trx, id);
      if (!v) throw notFound('Visitor');
      const pages = await visitors.recentPagesOf(trx, id, RECENT_PAGES);
      const contact = v.contact_id ? await contactInTransaction(trx, v.contact_id) : undefined;
      const conversations = await visitors.conversationsOfVisitor(trx, id, RECENT_CONVERSATIONS);
      return {
        id: v.id,
        name: v.name,
        email: v.email,
        contact_id: v.contact_id,
        widget_id: v.widget_id,
        metadata: v.metadata,
        created_at: v.created_at.toISOString(),
        last_seen_at: v.last_seen_at.toISOString(),
        recent_pages: pages.map((p) => ({ ...p, viewed_at: p.viewed_at.toISOString() })),
        contact: contact ?? null,
        conversations: conversations.map((c) => ({ id: c.id, status: c.status, last_message_at: c.last_message_at?.toISOString() ?? null })),
      };
    });
  }
}
