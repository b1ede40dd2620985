import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { WidgetService } from './widget.service.ts';

type WidgetOps = 'listWidgets' | 'createWidget' | 'getWidget' | 'updateWidget' | 'deleteWidget' | 'rotateWidgetSecret' | 'listDomains' | 'addDomain' | 'removeDomain';

export const widgetHandlers = (widgets: WidgetService): Pick<Handlers, WidgetOps> => ({
  listWidgets: async ({ principal, query }) => ({
    status: 200,
    body: await widgets.list(requirePrincipal(principal), { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  createWidget: async ({ principal, body }) => ({ status: 201, body: await widgets.create(requirePrincipal(principal), body) }),
  getWidget: async ({ principal, params }) => ({ status: 200, body: await widgets.get(requirePrincipal(principal), params.id) }),
  updateWidget: async ({ principal, params, body }) => ({ status: 200, body: await widgets.update(requirePrincipal(principal), params.id, body) }),
  deleteWidget: async ({ principal, params }) => ({ status: 200, body: await widgets.remove(requirePrincipal(principal), params.id) }),
  rotateWidgetSecret: async ({ principal, params }) => ({ status: 200, body: await widgets.rotateSecret(requirePrincipal(principal), params.id) }),
  listDomains: async ({ principal, query }) => ({
    status: 200,
    body: await widgets.listDomains(requirePrincipal(principal), query.widget_id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  addDomain: async ({ principal, body }) => ({ status: 201, body: await widgets.addDomain(requirePrincipal(principal), body) }),
  removeDomain: async ({ principal, params }) => ({ status: 200, body: await widgets.removeDomain(requirePrincipal(principal), params.id) }),
});
