// The contract's types the SDK hands out: REST and event payloads from generated/api.ts (openapi/chat.yaml,
// which the AsyncAPI document's event payloads point at), and the WebSocket's control and client frames,
// which only openapi/events.asyncapi.yaml defines (test/e2e/sdk-package.test.ts compares them with it).
import type { components } from '../generated/api.ts';

export type { components, Credentials, operations, paths } from '../generated/api.ts';

type Schemas = components['schemas'];
/** Any schema of the contract by name: `Schema<'Conversation'>`. */
export type Schema<K extends keyof Schemas> = Schemas[K];

/** Every event frame the WebSocket sends: stored events (with an `id`) and live signals (without). */
export type SocketEvent = Schemas['SocketEvent'];
/** A stored event, as the events feed (`GET /v1/events`) and the WebSocket deliver it. */
export type StoredEvent = Schemas['Event'];
export type SocketEventType = SocketEvent['type'];
/** The event of one `type`: `EventOf<'message.created'>['data']['message']`. */
export type EventOf<T extends SocketEventType> = Extract<SocketEvent, { type: T }>;

export type ErrorCode = Schemas['ErrorCode'];
/** The problem+json body of every error answer. */
export type Problem = Schemas['Problem'];
export type TokenPair = Schemas['TokenPair'];
export type RegisterRequest = Schemas['RegisterRequest'];
export type RegisterResponse = Schemas['RegisterResponse'];

// Control frames (server to client): not events, never stored, never resumed from.
export interface WelcomeFrame {
  type: 'welcome';
  connection_id: string;
  audience: 'member' | 'integration' | 'visitor';
  heartbeat_seconds: number;
}
/** The `last_event_id` is unknown or past retention: reload over REST, then continue live. */
export interface ResyncRequiredFrame {
  type: 'resync_required';
  reason: 'unknown_event' | 'past_retention';
}
export interface PongFrame {
  type: 'pong';
}
/** A frame the server could not act on; the connection stays open. */
export interface ErrorFrame {
  type: 'error';
  code: ErrorCode;
  detail: string;
}
export type ControlFrame = WelcomeFrame | ResyncRequiredFrame | PongFrame | ErrorFrame;

// Frames a client sends.
export interface TypingFrame {
  type: 'typing';
  conversation_id: Schemas['ConversationId'];
  is_typing: boolean;
}
export interface PresenceFrame {
  type: 'presence';
  status: 'online' | 'away';
}
export interface PingFrame {
  type: 'ping';
}
export type ClientFrame = TypingFrame | PresenceFrame | PingFrame;

/** The `type` of each control frame, for telling them from events (and for the check against the AsyncAPI document). */
export const CONTROL_FRAME_TYPES: readonly ControlFrame['type'][] = ['welcome', 'resync_required', 'pong', 'error'];
export const CLIENT_FRAME_TYPES: readonly ClientFrame['type'][] = ['typing', 'presence', 'ping'];
