// Compiled by `npm run typecheck`, never run: an event's `data` narrows by its `type`, as a client's
// switch would use it. Each @ts-expect-error fails the typecheck if the line it marks ever compiles.
import type { components } from '../../generated/api.ts';

type S = components['schemas'];

export function describe(event: S['Event']): string {
  switch (event.type) {
    case 'message.created':
      return event.data.message.content;
    case 'conversation.transferred':
      return `${event.data.conversation_id} to ${event.data.assigned_user_id}`;
    case 'conversation.closed':
      // @ts-expect-error a closed conversation's data has no message
      return event.data.message.content;
    default:
      return event.id;
  }
}

export function fromSocket(frame: S['SocketEvent']): string {
  if (frame.type === 'typing') {
    // @ts-expect-error live signals have no id: nothing resumes from them
    return frame.id;
  }
  if (frame.type === 'presence.updated') return frame.data.presence;
  return 'id' in frame ? frame.id : frame.type;
}

// The feed (Event) never holds a live signal.
// @ts-expect-error typing is not a stored event
export const stored: S['Event']['type'] = 'typing';
