// A TypeScript client of the service on openapi-fetch, typed from generated/api.ts: what an integration
// writes. It logs in, refreshes its tokens once when a call answers 401 and retries that call, and opens
// the WebSocket with a ticket, handing out frames as the contract's SocketEvent, narrowed by `type`.
// test/client.test.ts runs a whole flow with it against the service in CI.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../generated/api.ts';

export type SocketEvent = components['schemas']['SocketEvent'];
type TokenPair = components['schemas']['TokenPair'];

export interface ChatClientOptions {
  /** The server URL ending in /api, as in the contract's servers. */
  baseUrl: string;
  fetch?: typeof fetch;
}

export class ChatClient {
  readonly api;
  #tokens: Pick<TokenPair, 'access_token' | 'refresh_token'> | undefined;
  #refreshing: Promise<void> | undefined;
  readonly #baseUrl: string;
  /** How many times a 401 made the client refresh (an integration would log it). */
  refreshes = 0;

  constructor(options: ChatClientOptions) {
    this.#baseUrl = options.baseUrl;
    this.api = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
    this.api.use(this.#auth());
  }

  async login(email: string, password: string): Promise<void> {
    const { data, error } = await this.api.POST('/v1/auth/login', { body: { email, password } });
    if (error) throw new Error(`login failed: ${error.code}: ${error.detail}`);
    this.#tokens = data;
  }

  /** Uses tokens from elsewhere (a sign-up, an earlier run). */
  useTokens(tokens: Pick<TokenPair, 'access_token' | 'refresh_token'>): void {
    this.#tokens = tokens;
  }

  get tokens() {
    return this.#tokens;
  }

  // Bearer on every call but the auth ones; a 401 on a call made with the current token refreshes once
  // (concurrent calls share that refresh) and retries the call with the new token.
  #auth(): Middleware {
    const retries = new WeakMap<Request, Request>();
    return {
      onRequest: ({ request, schemaPath }) => {
        if (schemaPath.startsWith('/v1/auth/') || !this.#tokens) return request;
        request.headers.set('Authorization', `Bearer ${this.#tokens.access_token}`);
        retries.set(request, request.clone());
        return request;
      },
      onResponse: async ({ request, response }) => {
        const retry = retries.get(request);
        if (response.status !== 401 || !retry) return response;
        const sent = request.headers.get('Authorization');
        if (sent === `Bearer ${this.#tokens?.access_token}`) await this.#refresh();
        retry.headers.set('Authorization', `Bearer ${this.#tokens!.access_token}`);
        return fetch(retry);
      },
    };
  }

  async #refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      this.refreshes++;
      const { data, error } = await this.api.POST('/v1/auth/refresh', { body: { refresh_token: this.#tokens!.refresh_token } });
      if (error) throw new Error(`refresh failed: ${error.code}: log in again`);
      this.#tokens = data;
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** Opens the WebSocket (a ticket, as browsers do) and calls onEvent with each event frame. */
  async connect(onEvent: (event: SocketEvent) => void): Promise<{ close(): void; welcomed: Promise<void> }> {
    const { data, error } = await this.api.POST('/v1/ws/tickets');
    if (error) throw new Error(`no ticket: ${error.code}`);
    const url = new URL(`${this.#baseUrl.replace(/^http/, 'ws')}/v1/ws`);
    url.searchParams.set('ticket', data.ticket);
    const ws = new WebSocket(url);
    const welcomed = new Promise<void>((resolve, reject) => {
      ws.addEventListener('error', () => reject(new Error('the WebSocket failed')), { once: true });
      ws.addEventListener('message', (message) => {
        const frame = JSON.parse(String(message.data)) as { type: string };
        // Control frames (welcome, pong, resync_required, error) are not events.
        if (frame.type === 'welcome') return resolve();
        if (['pong', 'resync_required', 'error'].includes(frame.type)) return;
        onEvent(frame as SocketEvent);
      });
    });
    return { close: () => ws.close(), welcomed };
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
