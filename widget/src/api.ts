import type { components } from '../../generated/api.ts';

export type S = components['schemas'];
export type Message = S['Message'];
export type Conversation = S['WidgetConversation'];
export type Session = S['WidgetSession'];
export type Settings = S['WidgetSettings'];

/** Why a call failed, in the terms the visitor is told about (never the raw problem). */
export type FailureKind =
  | 'offline'
  | 'refused'
  | 'identity'
  | 'expired'
  | 'rate_limited'
  | 'plan_limit'
  | 'closed'
  | 'too_large'
  | 'not_found'
  | 'invalid'
  | 'unavailable';

export class ApiFailure extends Error {
  readonly kind: FailureKind;
  readonly code: string | undefined;

  constructor(kind: FailureKind, code?: string) {
    super(kind);
    this.kind = kind;
    this.code = code;
  }
}

function kindOf(status: number, code: string | undefined): FailureKind {
  if (status === 401) return 'expired';
  if (status === 402) return 'plan_limit';
  if (status === 403) return 'refused';
  if (status === 404) return 'not_found';
  if (status === 409 && code === 'ERR_CONVERSATION_CLOSED') return 'closed';
  if (status === 413) return 'too_large';
  if (status === 429) return 'rate_limited';
  if (status >= 400 && status < 500) return 'invalid';
  return 'unavailable';
}

/** The public widget API (`/v1/widget/...`), as any outside client calls it. */
export class WidgetApi {
  readonly base: string;
  token: string | undefined;

  constructor(base: string) {
    this.base = base;
  }

  startSession(body: S['WidgetSessionCreate'], previousToken: string | undefined): Promise<Session> {
    return this.#call('POST', '/v1/widget/sessions', body, previousToken);
  }

  listConversations(): Promise<S['WidgetConversationList']> {
    return this.#call('GET', '/v1/widget/conversations');
  }

  startConversation(body: S['WidgetMessageCreate']): Promise<Conversation> {
    return this.#call('POST', '/v1/widget/conversations', body);
  }

  listMessages(conversationId: string): Promise<S['MessageList']> {
    return this.#call('GET', `/v1/widget/conversations/${encodeURIComponent(conversationId)}/messages?limit=100`);
  }

  sendMessage(conversationId: string, body: S['WidgetMessageCreate']): Promise<Message> {
    return this.#call('POST', `/v1/widget/conversations/${encodeURIComponent(conversationId)}/messages`, body);
  }

  answerSurvey(conversationId: string, body: S['SurveyAnswerCreate']): Promise<S['SurveyAnswer']> {
    return this.#call('POST', `/v1/widget/conversations/${encodeURIComponent(conversationId)}/survey`, body);
  }

  upload(file: File, conversationId: string | undefined): Promise<S['File']> {
    const form = new FormData();
    if (conversationId) form.append('conversation_id', conversationId);
    form.append('file', file, file.name);
    return this.#call('POST', '/v1/widget/files', form);
  }

  file(id: string): Promise<S['FileWithUrl']> {
    return this.#call('GET', `/v1/widget/files/${encodeURIComponent(id)}`);
  }

  /** The visitor socket's address: the visitor token in the query, since browsers cannot set headers there. */
  socketUrl(lastEventId: string | undefined): string {
    const url = new URL(`${this.base.replace(/^http/, 'ws')}/v1/ws`);
    url.searchParams.set('visitor_token', this.token ?? '');
    if (lastEventId) url.searchParams.set('last_event_id', lastEventId);
    return url.toString();
  }

  async #call<T>(method: string, path: string, body?: unknown, token = this.token): Promise<T> {
    const headers: Record<string, string> = {};
    if (token) headers.Authorization = `Bearer ${token}`;
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await fetch(this.base + path, { method, headers, body: payload, credentials: 'omit' });
    } catch {
      throw new ApiFailure(await this.#whyUnreachable());
    }
    if (res.ok) return (await res.json()) as T;
    let code: string | undefined;
    try {
      code = ((await res.json()) as { code?: string }).code;
    } catch {
      code = undefined;
    }
    throw new ApiFailure(kindOf(res.status, code), code);
  }

  /**
   * A refused origin gets no CORS header, so the browser reports it exactly like a network failure. An
   * opaque request (no-cors) still completes when the service is reachable: then the answer was withheld,
   * which means this page's origin is not one of the widget's domains.
   */
  async #whyUnreachable(): Promise<FailureKind> {
    if (typeof navigator !== 'undefined' && navigator.onLine === false) return 'offline';
    try {
      await fetch(`${this.base}/v1/widget/conversations`, { mode: 'no-cors', credentials: 'omit', cache: 'no-store' });
      return 'refused';
    } catch {
      return 'offline';
    }
  }
}
