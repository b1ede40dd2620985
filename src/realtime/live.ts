import type { Database } from '../db/database.ts';
import { conversationOf } from '../conversations/conversation.service.ts';
import type { LivePayloads, LiveSignalType } from '../events/outbox.ts';
import { type Connection, deliverOrBuffer, sendError, subjectOf } from './connection.ts';
import type { Fanout, LiveSignal } from './fanout.ts';
import type { ConnectionStatus, PresenceTracker } from './presence-tracker.ts';

export interface LiveContext {
  database: Database;
  fanout: Fanout;
  presence: PresenceTracker;
  maxBufferedBytes: number;
}

// Live signals carry no id: they are not stored, so an id would be one that resume cannot find.
function liveEnvelope<T extends LiveSignalType>(tenantId: string, type: T, data: LivePayloads[T]): LiveSignal['envelope'] {
  return { type, tenant_id: tenantId, created_at: new Date().toISOString(), data };
}

/** Records the connection's status (undefined: gone) and tells the team when the presence changed. */
export async function announcePresence(ctx: LiveContext, conn: Connection, status: ConnectionStatus | undefined): Promise<void> {
  const subject = subjectOf(conn);
  if (subject === undefined) return;
  const { before, after } = status
    ? await ctx.presence.set(conn.tenantId, subject, conn.id, status)
    : await ctx.presence.remove(conn.tenantId, subject, conn.id);
  if (before === after) return;
  if (conn.audience.kind === 'member') {
    ctx.fanout.live({ tenantId: conn.tenantId, envelope: liveEnvelope(conn.tenantId, 'presence.updated', { user_id: subject, presence: after }), toMembers: true });
  } else if (before === 'offline' || after === 'offline') {
    const type = after === 'offline' ? 'visitor.offline' : 'visitor.online';
    ctx.fanout.live({ tenantId: conn.tenantId, envelope: liveEnvelope(conn.tenantId, type, { visitor_id: subject }), toMembers: true });
  }
}

/** Relays a typing frame: members see who, the visitor only that someone in the team is typing. */
export async function relayTyping(ctx: LiveContext, conn: Connection, conversationId: string, isTyping: boolean): Promise<void> {
  if (conn.audience.kind === 'integration') return;
  const conversation = await ctx.database.withTenant(conn.tenantId, (trx) => conversationOf(trx, conversationId));
  const audience = conn.audience;
  if (!conversation || (audience.kind === 'visitor' && conversation.visitor_id !== audience.visitorId)) {
    sendError(conn, 'ERR_NOT_FOUND', 'Conversation not found', ctx.maxBufferedBytes);
    return;
  }
  const base = { conversation_id: conversationId, is_typing: isTyping };
  if (audience.kind === 'visitor') {
    ctx.fanout.live({ tenantId: conn.tenantId, envelope: liveEnvelope(conn.tenantId, 'typing', { ...base, sender_type: 'visitor' }), toMembers: true, exceptConnectionId: conn.id });
    return;
  }
  ctx.fanout.live({
    tenantId: conn.tenantId,
    envelope: liveEnvelope(conn.tenantId, 'typing', { ...base, sender_type: 'user', sender_id: audience.userId }),
    toMembers: true,
    ...(conversation.visitor_id ? { toVisitorId: conversation.visitor_id, visitorData: { ...base, sender_type: 'user' } } : {}),
    exceptConnectionId: conn.id,
  });
}

/** Delivers a live signal (from any instance) to this instance's sockets of its tenant. */
export function deliverLive(connections: Iterable<Connection>, signal: LiveSignal, maxBufferedBytes: number): void {
  let memberFrame: string | undefined;
  let visitorFrame: string | undefined;
  for (const conn of connections) {
    if (conn.id === signal.exceptConnectionId) continue;
    if (conn.audience.kind === 'visitor') {
      if (signal.toVisitorId !== conn.audience.visitorId) continue;
      visitorFrame ??= JSON.stringify({ ...signal.envelope, data: signal.visitorData ?? signal.envelope.data });
      deliverOrBuffer(conn, visitorFrame, maxBufferedBytes);
    } else if (signal.toMembers) {
      memberFrame ??= JSON.stringify(signal.envelope);
      deliverOrBuffer(conn, memberFrame, maxBufferedBytes);
    }
  }
}
