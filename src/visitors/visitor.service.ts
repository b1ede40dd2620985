import type { components } from '../../generated/api.ts';
import { findContact } from '../contacts/contact.repository.ts';
import type { Database } from '../db/database.ts';
import type { Principal } from '../shared/principal.ts';
import { notFound } from '../shared/errors.ts';
import { DEFAULT_PAGE_SIZE, pageOf } from '../shared/pagination.ts';
import * as visitors from './visitor.repository.ts';

type S = components['schemas'];

/** "Currently on a tracked domain": a page view, or a live widget socket (which keeps this fresh), this recently. */
export const ONLINE_WINDOW_MS = 60_000;
const RECENT_PAGES = 20;
const RECENT_CONVERSATIONS = 50;

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
      const contact = v.contact_id ? await findContact(trx, v.contact_id) : undefined;
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
        contact: contact
          ? {
              id: contact.id,
              name: contact.name,
              email: contact.email,
              phone: contact.phone,
              company: contact.company,
              custom_attributes: contact.custom_attributes as S['CustomAttributes'],
              created_at: contact.created_at.toISOString(),
              updated_at: contact.updated_at.toISOString(),
            }
          : null,
        conversations: conversations.map((c) => ({ id: c.id, status: c.status, last_message_at: c.last_message_at?.toISOString() ?? null })),
      };
    });
  }
}
