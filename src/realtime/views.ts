import { envelopeOf } from '../events/envelope.ts';
import type { FeedRow } from '../events/feed.repository.ts';
import { VISITOR_EVENT_TYPES, eventDataForVisitor } from '../events/visitor-view.ts';
import type { Connection } from './connection.ts';
import { type OutgoingFrame, outgoingFrame } from './wire.ts';

/**
 * The frame a connection gets for a stored event, or null when the event is not for it. Each view (member
 * or visitor) is serialised, UTF-8 encoded and framed once per event: `views` carries them across the
 * connections of one delivery, and every socket writes the same bytes (a string would be encoded again
 * per socket, and ws would frame it again).
 */
export function frameFor(conn: Connection, row: FeedRow, views: Map<string, OutgoingFrame | null>): OutgoingFrame | null {
  if (conn.audience.kind === 'visitor') {
    if (row.visitor_id !== conn.audience.visitorId || row.internal || !VISITOR_EVENT_TYPES.has(row.type)) return null;
  }
  const key = conn.audience.kind === 'visitor' ? 'visitor' : 'member';
  let frame = views.get(key);
  if (frame === undefined) {
    frame = outgoingFrame(Buffer.from(envelopeOf(row, key === 'visitor' ? eventDataForVisitor(row.data) : row.data), 'utf8'));
    views.set(key, frame);
  }
  return frame;
}
