import type { Handlers } from '../http/contract.ts';
import { requireUser } from '../shared/principal.ts';
import type { TicketStore } from './tickets.ts';

export const ticketHandlers = (tickets: TicketStore): Pick<Handlers, 'createWsTicket'> => ({
  createWsTicket: async ({ principal }) => {
    const user = requireUser(principal);
    const { ticket, expiresAt } = await tickets.issue({ userId: user.userId, tenantId: user.tenantId, sessionId: user.sessionId });
    return { status: 201, body: { ticket, expires_at: expiresAt.toISOString() } };
  },
});
