import { sql } from 'kysely';
import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
import type { Principal } from '../http/access.ts';
import { notFound } from '../shared/errors.ts';
import { pageOf } from '../shared/pagination.ts';

type S = components['schemas'];

/** "Currently on a tracked domain": a page view, or a live widget socket (which keeps this fresh), this recently. */
export const ONLINE_WINDOW_MS = 60_000;

export class VisitorService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async list(principal: Principal, query: { widget_id?: string; limit?: number; offset?: number }): Promise<S['VisitorList']> {
    const page = { limit: query.limit ?? 20, offset: query.offset ?? 0 };
    const since = new Date(Date.now() - ONLINE_WINDOW_MS);
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => {
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
      if (query.widget_id) q = q.where('v.widget_id', '=', query.widget_id);
      return offsetPage(q.orderBy('v.last_seen_at', 'desc').orderBy('v.id', 'desc'), page);
    });
    return {
      data: rows.map((v) => ({ ...v, last_seen_at: v.last_seen_at.toISOString() })),
      pagination: pageOf(total, page, rows.length),
    };
  }

  async get(principal: Principal, id: string): Promise<S['Visitor']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const v = await trx.selectFrom('visitors').selectAll().where('id', '=', id).executeTakeFirst();
      if (!v) throw notFound('Visitor');
      const pages = await trx
        .selectFrom('page_views')
        .select(['url', 'title', 'referrer', 'viewed_at'])
        .where('visitor_id', '=', id)
        .orderBy('viewed_at', 'desc')
        .orderBy('id', 'desc')
        .limit(20)
        .execute();
      const contact = v.contact_id ? await trx.selectFrom('contacts').selectAll().where('id', '=', v.contact_id).executeTakeFirst() : undefined;
      const conversations = await trx
        .selectFrom('conversations')
        .select(['id', 'status', 'last_message_at'])
        .where('visitor_id', '=', id)
        .orderBy('last_activity_at', 'desc')
        .limit(50)
        .execute();
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
