// @customer-chat/client: the package's entry point.
export { ChatClient, describeEvent, type ChatClientOptions, type Tokens } from './chat-client.ts';
export { ChatApiError, type DataOf, isApiError, ok } from './errors.ts';
export { ChatSocket, type ConnectOptions, type Dial, type HeadersWebSocketConstructor, type SocketEnd, type SocketStatus, type WebSocketConstructor, type WebSocketLike } from './socket.ts';
export {
  CLIENT_FRAME_TYPES,
  CONTROL_FRAME_TYPES,
  type ClientFrame,
  type components,
  type ControlFrame,
  type Credentials,
  type ErrorCode,
  type ErrorFrame,
  type EventOf,
  type operations,
  type paths,
  type PingFrame,
  type PongFrame,
  type PresenceFrame,
  type Problem,
  type RegisterRequest,
  type RegisterResponse,
  type ResyncRequiredFrame,
  type Schema,
  type SocketEvent,
  type SocketEventType,
  type StoredEvent,
  type TokenPair,
  type TypingFrame,
  type WelcomeFrame,
} from './contract.ts';
