// The event stream over one WebSocket that outlives its connections: when a connection drops it dials
// again (a fresh ticket, after a refresh if the login's token expired) with `last_event_id`, so the
// server replays what was missed; an event id seen before is not handed out twice.
import { ChatApiError } from './errors.ts';
import type { ClientFrame, ControlFrame, ErrorFrame, EventOf, ResyncRequiredFrame, SocketEvent, SocketEventType, WelcomeFrame } from './contract.ts';
import { CONTROL_FRAME_TYPES } from './contract.ts';

/** What the SDK needs of a WebSocket: the browser's, Node's global one (22+) and the `ws` package's all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: { data?: unknown; code?: number; reason?: string }) => void): void;
}
/**
 * A WebSocket class: the browser's, Node's global one or `ws`'s. The SDK passes a second argument only for
 * an API key's socket, `{ headers }`, which Node's WebSocket and `ws` take; `never` lets every class fit.
 */
export type WebSocketConstructor = new (url: string, init?: never) => WebSocketLike;
/** The constructor as an API key's socket calls it. */
export type HeadersWebSocketConstructor = new (url: string, init: { headers: Record<string, string> }) => WebSocketLike;

/**
 * Opens one connection, resuming after `lastEventId`; `credentialClosed` when the last one was closed for
 * its credential (4001). Throws a ChatApiError with status 401 or 403 when the credential is gone for good.
 */
export type Dial = (lastEventId: string | undefined, credentialClosed: boolean) => Promise<WebSocketLike>;

export type SocketStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ConnectOptions {
  /** Resume after this event (the `id` of the last event handled in an earlier run). */
  lastEventId?: string;
  /** The server could not resume (unknown id, or past the 7-day retention): reload state over REST. */
  onResync?: (frame: ResyncRequiredFrame) => void;
  /** A frame of ours the server could not act on (a typing frame for an unknown conversation). */
  onError?: (frame: ErrorFrame) => void;
  onStatus?: (status: SocketStatus) => void;
  /** Dial again after a dropped connection (default true). */
  reconnect?: boolean;
  /** The longest wait between two dials, in ms (default 30 000); the first retry waits about 250 ms. */
  maxDelayMs?: number;
  /** How many recent event ids are remembered to drop repeats (default 5 000). */
  dedupWindow?: number;
}

/** How a socket ended for good: closed by the caller, refused for good, or a protocol error. */
export interface SocketEnd {
  code: number;
  reason: string;
  error?: unknown;
}

// 1008 and 1009 mean a frame of ours broke the protocol: sending it again would break it again.
const FATAL_CLOSES = new Set([1008, 1009]);
const CREDENTIAL_CLOSE = 4001;
const CONTROL = new Set<string>(CONTROL_FRAME_TYPES);

export class ChatSocket {
  /** The last stored event's id handed out: where a later connection resumes. */
  lastEventId: string | undefined;
  /** How many times the socket dialled again after a drop. */
  reconnects = 0;
  /** The first `welcome`: from then on the socket receives everything that happens. */
  readonly welcomed: Promise<WelcomeFrame>;
  /** Resolves once the socket has ended for good (close(), or a drop it does not recover from). */
  readonly closed: Promise<SocketEnd>;

  readonly #dial: Dial;
  readonly #options: ConnectOptions;
  readonly #handlers = new Set<(event: SocketEvent) => void>();
  readonly #seen = new Set<string>();
  readonly #pongs: { resolve: () => void; reject: (error: Error) => void }[] = [];
  #ws: WebSocketLike | undefined;
  #status: SocketStatus = 'connecting';
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #welcome!: { resolve: (frame: WelcomeFrame) => void; reject: (error: unknown) => void };
  #end!: (end: SocketEnd) => void;

  /** Made by ChatClient.connect, which knows how to dial (a ticket, or an API key's headers). */
  constructor(dial: Dial, options: ConnectOptions = {}) {
    this.#dial = dial;
    this.#options = options;
    this.lastEventId = options.lastEventId;
    this.welcomed = new Promise((resolve, reject) => (this.#welcome = { resolve, reject }));
    // Awaiting `welcomed` is optional: a socket that ends before any welcome must not be an unhandled rejection.
    this.welcomed.catch(() => undefined);
    this.closed = new Promise((resolve) => (this.#end = resolve));
  }

  get status(): SocketStatus {
    return this.#status;
  }

  /** The first dial; rejects (a ChatApiError when no ticket was given) instead of retrying. */
  async start(): Promise<void> {
    this.#attach(await this.#dial(this.lastEventId, false));
  }

  /** Every event, stored or live; `event.data` narrows by `event.type`. Returns the unsubscribe. */
  onEvent(handler: (event: SocketEvent) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** The events of one type, already narrowed. Returns the unsubscribe. */
  on<T extends SocketEventType>(type: T, handler: (event: EventOf<T>) => void): () => void {
    return this.onEvent((event) => {
      if (event.type === type) handler(event as EventOf<T>);
    });
  }

  /** The next event of `type` (matching `test`) to arrive from now on; rejects after `timeoutMs` (default 10 s). */
  next<T extends SocketEventType>(type: T, test: (event: EventOf<T>) => boolean = () => true, timeoutMs = 10_000): Promise<EventOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`no ${type} event within ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.on(type, (event) => {
        if (!test(event)) return;
        clearTimeout(timer);
        off();
        resolve(event);
      });
    });
  }

  /** Sends a typing or presence frame (dropped while reconnecting: both are live signals). */
  send(frame: ClientFrame): void {
    if (this.#ws?.readyState === 1) this.#ws.send(JSON.stringify(frame));
  }

  /** Resolves when the server has handled every frame sent before it (it answers frames in order). */
  ping(): Promise<void> {
    if (this.#ws?.readyState !== 1) return Promise.reject(new Error('the socket is not open'));
    const answered = new Promise<void>((resolve, reject) => this.#pongs.push({ resolve, reject }));
    this.#ws.send(JSON.stringify({ type: 'ping' }));
    return answered;
  }

  close(): void {
    this.#finish({ code: 1000, reason: 'closed by the client' });
  }

  #attach(ws: WebSocketLike): void {
    if (this.#status === 'closed') return ws.close(1000);
    this.#ws = ws;
    ws.addEventListener('message', (message) => {
      if (this.#ws === ws) this.#frame(String(message.data));
    });
    ws.addEventListener('close', (event) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      this.#dropPongs();
      this.#dropped(event.code ?? 1006, event.reason ?? '');
    });
  }

  #frame(text: string): void {
    let frame: SocketEvent | ControlFrame;
    try {
      frame = JSON.parse(text) as SocketEvent | ControlFrame;
    } catch {
      return;
    }
    if (CONTROL.has(frame.type)) return this.#control(frame as ControlFrame);
    const event = frame as SocketEvent;
    if ('id' in event) {
      if (this.#seen.has(event.id)) return;
      this.#remember(event.id);
      this.lastEventId = event.id;
    }
    for (const handler of [...this.#handlers]) handler(event);
  }

  #control(frame: ControlFrame): void {
    switch (frame.type) {
      case 'welcome':
        this.#attempt = 0;
        this.#setStatus('open');
        this.#welcome.resolve(frame);
        return;
      case 'resync_required':
        // The id cannot be resumed from: the next connection starts live, as this one continues.
        this.lastEventId = undefined;
        this.#options.onResync?.(frame);
        return;
      case 'pong':
        this.#pongs.shift()?.resolve();
        return;
      case 'error':
        this.#options.onError?.(frame);
        return;
    }
  }

  #remember(id: string): void {
    this.#seen.add(id);
    const window = this.#options.dedupWindow ?? 5_000;
    // A Set iterates in insertion order: the first is the oldest.
    if (this.#seen.size > window) this.#seen.delete(this.#seen.values().next().value!);
  }

  #dropped(code: number, reason: string): void {
    if (this.#status === 'closed') return;
    if (FATAL_CLOSES.has(code) || this.#options.reconnect === false) return this.#finish({ code, reason });
    this.#setStatus('reconnecting');
    // A credential that expired is replaced at once (the next ticket refreshes the login); anything else backs off.
    if (code === CREDENTIAL_CLOSE) this.#schedule(0, true);
    else this.#schedule(this.#delay(), false);
  }

  #schedule(delayMs: number, credentialClosed: boolean): void {
    this.#timer = setTimeout(() => void this.#redial(credentialClosed), delayMs);
  }

  async #redial(credentialClosed: boolean): Promise<void> {
    if (this.#status === 'closed') return;
    this.#attempt++;
    this.reconnects++;
    let ws: WebSocketLike;
    try {
      ws = await this.#dial(this.lastEventId, credentialClosed);
    } catch (error) {
      // Refused for good (the login ended, the key was revoked, no permission): stop; otherwise try later.
      if (error instanceof ChatApiError && [401, 403].includes(error.status)) return this.#finish({ code: CREDENTIAL_CLOSE, reason: error.message, error });
      return this.#schedule(this.#delay(), false);
    }
    this.#attach(ws);
  }

  #delay(): number {
    const max = this.#options.maxDelayMs ?? 30_000;
    const base = Math.min(max, 250 * 2 ** this.#attempt);
    return base / 2 + Math.random() * (base / 2);
  }

  #finish(end: SocketEnd): void {
    if (this.#status === 'closed') return;
    clearTimeout(this.#timer);
    this.#setStatus('closed');
    const ws = this.#ws;
    this.#ws = undefined;
    ws?.close(1000);
    this.#dropPongs();
    this.#welcome.reject(end.error ?? new Error(`the socket closed (${end.code}) before it was welcomed`));
    this.#end(end);
  }

  #dropPongs(): void {
    for (const pong of this.#pongs.splice(0)) pong.reject(new Error('the connection closed before the pong'));
  }

  #setStatus(status: SocketStatus): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#options.onStatus?.(status);
  }
}
