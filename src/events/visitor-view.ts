import type { components } from '../../generated/api.ts';
import type { EventPayloads, EventType } from './outbox.ts';

type S = components['schemas'];

/**
 * What a visitor may see. The one place that decides it, for REST answers and socket frames alike:
 * visitors never learn who in the team does what, and see only their own conversations' public events.
 */

/** The stored event types a visitor receives about their own conversations (never internal ones). */
export const VISITOR_EVENT_TYPES: ReadonlySet<EventType> = new Set<EventType>([
  'conversation.created',
  'conversation.updated',
  'conversation.closed',
  'conversation.reopened',
  'message.created',
]);

/** A message as its visitor sees it: a member is not named. Internal notes never get this far. */
export function messageForVisitor(message: S['Message']): S['Message'] {
  return message.sender_type === 'visitor' ? message : { ...message, sender_id: null };
}

/** An event's payload as its visitor sees it: no member named, no assignment, no department. */
export function eventDataForVisitor<T extends EventType>(data: EventPayloads[T]): EventPayloads[T] {
  const view: Record<string, unknown> = { ...data };
  if ('message' in data && data.message) view.message = messageForVisitor(data.message);
  if ('conversation' in data && data.conversation) {
    view.conversation = { ...data.conversation, assigned_to: null, assigned_user_id: null, department_id: null, unread_count: 0 };
  }
  return view as EventPayloads[T];
}
