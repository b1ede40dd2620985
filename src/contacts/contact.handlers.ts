import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { ContactService } from './contact.service.ts';

export const contactHandlers = (contacts: ContactService): Pick<Handlers, 'listContacts' | 'createContact' | 'getContact' | 'updateContact' | 'deleteContact'> => ({
  listContacts: async ({ principal, query }) => ({ status: 200, body: await contacts.list(requirePrincipal(principal), query) }),
  createContact: async ({ principal, body }) => ({ status: 201, body: await contacts.create(requirePrincipal(principal), body) }),
  getContact: async ({ principal, params }) => ({ status: 200, body: await contacts.get(requirePrincipal(principal), params.id) }),
  updateContact: async ({ principal, params, body }) => ({ status: 200, body: await contacts.update(requirePrincipal(principal), params.id, body) }),
  deleteContact: async ({ principal, params }) => ({ status: 200, body: await contacts.remove(requirePrincipal(principal), params.id) }),
});
