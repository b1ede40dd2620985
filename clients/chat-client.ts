// The client of the service that partners install (@customer-chat/client, built from this folder) and the
// repository's own tests use: REST on openapi-fetch typed from generated/api.ts; a login that refreshes
// its tokens once when a call answers 401 and retries that call (concurrent calls share the refresh), or
// an API key; and the WebSocket (a ticket, or the key's headers) as a ChatSocket that resumes after a
// drop and hands out each event once, as the contract's SocketEvent narrowed by `type`.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from '../generated/api.ts';
import type { RegisterRequest, RegisterResponse, SocketEvent, TokenPair } from './contract.ts';
import { ChatApiError, ok } from './errors.ts';
import { type ConnectOptions, ChatSocket, type HeadersWebSocketConstructor, type WebSocketConstructor, type WebSocketLike } from './socket.ts';

export type { SocketEvent } from './contract.ts';

export type Tokens = Pick<TokenPair, 'access_token' | 'refresh_token'>;

export interface ChatClientOptions {
  /** The server URL ending in /api, as in the contract's servers: `https://chat.example.com/api`. */
  baseUrl: string;
  /** Instead of a login: an API key (Settings → API keys) and its tenant's id. */
  apiKey?: { key: string; tenantId: string };
  /** Tokens from an earlier run (see onTokens). */
  tokens?: Tokens;
  /** Called with every new token pair (login, register, refresh), to keep them across runs. */
  onTokens?: (tokens: Tokens) => void;
  fetch?: typeof fetch;
  /** The WebSocket class; defaults to the global one (browsers, Node 22 and later). */
  WebSocket?: WebSocketConstructor;
}

export class ChatClient {
  /** The openapi-fetch client: every operation of the contract, typed by path, errors as values. */
  readonly api: Client<paths>;
  /** How many times a 401 made the client refresh (an integration would log it). */
  refreshes = 0;
  #tokens: Tokens | undefined;
  #refreshing: Promise<void> | undefined;
  readonly #options: ChatClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: ChatClientOptions) {
    this.#options = options;
    this.#tokens = options.tokens;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.api = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/$/, ''), fetch: this.#fetch });
    this.api.use(this.#auth());
  }

  /** Signs up: a user and a tenant they own, logged in. */
  async register(body: RegisterRequest): Promise<RegisterResponse> {
    const answer = await ok(this.api.POST('/v1/auth/register', { body }));
    this.useTokens(answer);
    return answer;
  }

  /** Logs in (to `tenantId`, or the tenant the user joined first); throws ChatApiError (a wrong e-mail or password: 401 ERR_UNAUTHENTICATED). */
  async login(email: string, password: string, tenantId?: string): Promise<TokenPair> {
    const tokens = await ok(this.api.POST('/v1/auth/login', { body: { email, password, ...(tenantId ? { tenant_id: tenantId } : {}) } }));
    this.useTokens(tokens);
    return tokens;
  }

  /** Ends the login on the server (every token of it) and forgets the tokens. */
  async logout(): Promise<void> {
    const refresh = this.#tokens?.refresh_token;
    this.#tokens = undefined;
    if (refresh) await ok(this.api.POST('/v1/auth/logout', { body: { refresh_token: refresh } }));
  }

  /** Uses tokens from elsewhere (a sign-up, an earlier run). */
  useTokens(tokens: Tokens): void {
    this.#tokens = { access_token: tokens.access_token, refresh_token: tokens.refresh_token };
    this.#options.onTokens?.(this.#tokens);
  }

  get tokens(): Tokens | undefined {
    return this.#tokens;
  }

  /**
   * Opens the event stream and resolves once the first connection is dialled (await `welcomed` for the
   * server's welcome). With a login it connects with a single-use ticket, as browsers must; with an API
   * key, with the key's headers. Rejects with ChatApiError when no ticket is given.
   */
  async connect(onEvent?: (event: SocketEvent) => void, options: ConnectOptions = {}): Promise<ChatSocket> {
    const socket = new ChatSocket((lastEventId, credentialClosed) => this.#dial(lastEventId, credentialClosed), options);
    if (onEvent) socket.onEvent(onEvent);
    await socket.start();
    return socket;
  }

  async #dial(lastEventId: string | undefined, credentialClosed: boolean): Promise<WebSocketLike> {
    const WebSocketClass = this.#options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WebSocketClass) throw new Error('no WebSocket here: pass the `ws` package as the WebSocket option');
    const url = new URL(`${this.#options.baseUrl.replace(/\/$/, '').replace(/^http/, 'ws')}/v1/ws`);
    if (lastEventId) url.searchParams.set('last_event_id', lastEventId);
    const key = this.#options.apiKey;
    if (key) {
      // A key's socket is closed for its credential only when the key was revoked or rotated: this value is done.
      if (credentialClosed) throw new ChatApiError('ERR_UNAUTHENTICATED', 401, 'the API key was revoked or rotated');
      // Browsers cannot send headers on the upgrade (nor should they hold an API key): Node's WebSocket and `ws` can.
      const WithHeaders = WebSocketClass as unknown as HeadersWebSocketConstructor;
      return new WithHeaders(url.href, { headers: { 'X-API-Key': key.key, 'X-Tenant-ID': key.tenantId } });
    }
    const ticket = await ok(this.api.POST('/v1/ws/tickets'));
    url.searchParams.set('ticket', ticket.ticket);
    return new WebSocketClass(url.href);
  }

  // Credentials on every call but the auth ones; a 401 on a call made with the current access token
  // refreshes once (concurrent calls share that refresh) and retries the call with the new token.
  #auth(): Middleware {
    const retries = new WeakMap<Request, Request>();
    return {
      onRequest: ({ request, schemaPath }) => {
        if (schemaPath.startsWith('/v1/auth/')) return request;
        const key = this.#options.apiKey;
        if (key) {
          request.headers.set('X-API-Key', key.key);
          request.headers.set('X-Tenant-ID', key.tenantId);
          return request;
        }
        if (!this.#tokens) return request;
        request.headers.set('Authorization', `Bearer ${this.#tokens.access_token}`);
        retries.set(request, request.clone());
        return request;
      },
      onResponse: async ({ request, response }) => {
        const retry = retries.get(request);
        if (response.status !== 401 || !retry || !this.#tokens) return response;
        const sent = request.headers.get('Authorization');
        if (sent === `Bearer ${this.#tokens.access_token}`) await this.#refresh();
        if (!this.#tokens) return response;
        retry.headers.set('Authorization', `Bearer ${this.#tokens.access_token}`);
        return this.#fetch(retry);
      },
    };
  }

  #refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      this.refreshes++;
      const { data, error, response } = await this.api.POST('/v1/auth/refresh', { body: { refresh_token: this.#tokens!.refresh_token } });
      // The login is over (the refresh token was used, revoked or expired): log in again.
      if (error !== undefined) throw ChatApiError.from(error, response);
      this.useTokens(data);
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }
}

/** What the flow shows for each event: `data` is narrowed by `type`, with no cast. */
export function describeEvent(event: SocketEvent): string {
  switch (event.type) {
    case 'conversation.created':
      return `created ${event.data.conversation.id}`;
    case 'conversation.transferred':
      return `transferred ${event.data.conversation_id}`;
    case 'conversation.closed':
      return `closed ${event.data.conversation_id} (survey ${event.data.survey_id})`;
    case 'conversation.reopened':
      return `reopened ${event.data.conversation_id}`;
    case 'message.created':
      return `message ${event.data.message.content}`;
    default:
      return event.type;
  }
}
