import type { S } from './api.ts';

export type SocketFrame =
  | S['SocketEvent']
  | { type: 'welcome'; connection_id: string }
  | { type: 'resync_required' }
  | { type: 'pong' }
  | { type: 'error'; code: string; detail: string };

export type SocketState = 'connecting' | 'open' | 'reconnecting';

export interface SocketHandlers {
  frame(frame: SocketFrame): void;
  state(state: SocketState): void;
  /** The server closed with 4001: the visitor token expired or the session is no longer valid. */
  expired(): void;
}

const MAX_BACKOFF_MS = 5000;
const CREDENTIAL_ENDED = 4001;

/**
 * The visitor socket, kept open: after any drop it reconnects with `last_event_id`, the id of the last
 * stored event it received, so the server replays exactly what was missed (none lost, none twice).
 */
export class VisitorSocket {
  readonly #url: (lastEventId: string | undefined) => string;
  readonly #on: SocketHandlers;
  #ws: WebSocket | undefined;
  #lastEventId: string | undefined;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #resuming = false;

  constructor(url: (lastEventId: string | undefined) => string, handlers: SocketHandlers) {
    this.#url = url;
    this.#on = handlers;
    // The browser knows before the backoff does that the network is back.
    addEventListener('online', () => this.reconnectNow());
  }

  /** Whether this connection resumed after an event (the server replays what was missed since). */
  get resuming(): boolean {
    return this.#resuming;
  }

  get open(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  connect(): void {
    this.#stopped = false;
    clearTimeout(this.#timer);
    this.#ws?.close();
    this.#on.state(this.#attempt === 0 ? 'connecting' : 'reconnecting');
    this.#resuming = this.#lastEventId !== undefined;
    const ws = new WebSocket(this.#url(this.#lastEventId));
    this.#ws = ws;
    ws.onmessage = (message) => {
      let frame: SocketFrame & { id?: string };
      try {
        frame = JSON.parse(String(message.data)) as SocketFrame & { id?: string };
      } catch {
        return;
      }
      if (frame.type === 'welcome') {
        this.#attempt = 0;
        this.#on.state('open');
      }
      // Past the retention the position is lost: start over from REST, then live from here.
      if (frame.type === 'resync_required') this.#lastEventId = undefined;
      if (frame.id) this.#lastEventId = frame.id;
      this.#on.frame(frame);
    };
    ws.onclose = (event) => {
      if (this.#ws !== ws || this.#stopped) return;
      this.#ws = undefined;
      if (event.code === CREDENTIAL_ENDED) return this.#on.expired();
      this.#scheduleReconnect();
    };
  }

  /** Resets the resume position (a new visitor identity has no events to resume). */
  forget(): void {
    this.#lastEventId = undefined;
  }

  reconnectNow(): void {
    if (this.#stopped || this.open) return;
    this.#attempt = Math.max(this.#attempt, 1);
    this.connect();
  }

  send(frame: { type: 'typing'; conversation_id: string; is_typing: boolean }): void {
    if (this.open) this.#ws!.send(JSON.stringify(frame));
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#ws?.close(1000);
    this.#ws = undefined;
  }

  #scheduleReconnect(): void {
    this.#attempt++;
    this.#on.state('reconnecting');
    // Exponential with jitter, so a restarted server is not met by every visitor at the same instant.
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.#attempt - 1)) * (0.5 + Math.random() / 2);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.connect(), delay);
  }
}
