// The app's one API client: openapi-fetch typed by the contract's generated `paths`, with the login kept
// here. The access token lives in memory only; the refresh token in this tab's sessionStorage (the API
// takes it in the body, and sessionStorage keeps it from other tabs and from the next browser start).
// A 401 refreshes once for every request that was waiting on it, then retries each, as
// clients/chat-client.ts does. A refresh the service refuses ends the login with a reason the login
// page shows.
import createFetchClient, { type Middleware } from 'openapi-fetch';
import createQueryClient from 'openapi-react-query';
import type { components, paths } from '../../../generated/api.ts';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];

const REFRESH_KEY = 'chat-app:refresh-token';

/** The service's API, same origin: `npm run app:dev` proxies /api to the mock or a service. */
export const API_BASE = `${location.origin}/api`;

interface SessionState {
  /** A refresh token is held: the user counts as logged in (the access token may still be on its way). */
  signedIn: boolean;
  /** Why the last login ended, for the login page (revoked, expired). */
  endedBecause: string | undefined;
}

let accessToken: string | undefined;
let state: SessionState = { signedIn: sessionStorage.getItem(REFRESH_KEY) !== null, endedBecause: undefined };
const listeners = new Set<() => void>();
let refreshing: Promise<boolean> | undefined;
let renewal: ReturnType<typeof setTimeout> | undefined;

function setState(next: SessionState) {
  state = next;
  for (const listener of listeners) listener();
}

function claim(name: 'sub' | 'tid'): string | undefined {
  const payload = accessToken?.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>;
    const value = claims[name];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

export const session = {
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  },
  get: () => state,
  get accessToken() {
    return accessToken;
  },
  /** The logged-in member's id, from the access token's `sub` (the contract's bearer format is JWT). */
  get userId(): string | undefined {
    return claim('sub');
  },
  /** The tenant the login is for, from the access token's `tid`. */
  get tenantId(): string | undefined {
    return claim('tid');
  },
  start(tokens: Pick<Schemas['TokenPair'], 'access_token' | 'refresh_token' | 'expires_in'>) {
    accessToken = tokens.access_token;
    sessionStorage.setItem(REFRESH_KEY, tokens.refresh_token);
    // A minute before the access token ends, a new one: no call needs to fail first. (A sleeping tab's
    // timer may fire late; the refresh on 401 covers that.)
    clearTimeout(renewal);
    renewal = setTimeout(() => void refreshSession(), Math.max(10, tokens.expires_in - 60) * 1000);
    setState({ signedIn: true, endedBecause: undefined });
  },
  end(reason?: string) {
    clearTimeout(renewal);
    accessToken = undefined;
    sessionStorage.removeItem(REFRESH_KEY);
    setState({ signedIn: false, endedBecause: reason });
  },
};

/**
 * Exchanges the refresh token for a new pair; concurrent callers share one exchange (the token is single
 * use: a second exchange with it would fail, and one presented again later ends the whole login).
 */
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    const refresh_token = sessionStorage.getItem(REFRESH_KEY);
    if (!refresh_token) return false;
    try {
      const { data, response } = await fetchClient.POST('/v1/auth/refresh', { body: { refresh_token } });
      if (data) {
        session.start(data);
        return true;
      }
      // A refusal ends the login; a service in trouble (5xx) keeps the token for the next try.
      if (response.status < 500) session.end('Your session has ended (signed out elsewhere, or expired). Log in again.');
    } catch {
      // Offline: the token is kept for when the network is back.
    }
    return false;
  })().finally(() => {
    refreshing = undefined;
  });
  return refreshing;
}

function auth(): Middleware {
  const retries = new WeakMap<Request, Request>();
  return {
    onRequest: async ({ request, schemaPath }) => {
      if (schemaPath.startsWith('/v1/auth/')) return request;
      // After a reload only the refresh token is left: exchange it before the first call.
      if (!accessToken && state.signedIn) await refreshSession();
      if (!accessToken) return request;
      request.headers.set('Authorization', `Bearer ${accessToken}`);
      retries.set(request, request.clone());
      return request;
    },
    onResponse: async ({ request, response }) => {
      const retry = retries.get(request);
      if (response.status !== 401 || !retry) return response;
      // Only the first 401 of a token refreshes; requests that were sent with it wait for that refresh.
      if (request.headers.get('Authorization') === `Bearer ${accessToken}` && !(await refreshSession())) return response;
      if (!accessToken) return response;
      retry.headers.set('Authorization', `Bearer ${accessToken}`);
      return fetch(retry);
    },
  };
}

export const fetchClient = createFetchClient<paths>({ baseUrl: API_BASE });
fetchClient.use(auth());

/** TanStack Query hooks over the same client: `$api.useQuery('get', '/v1/conversations', …)`. */
export const $api = createQueryClient(fetchClient);

export function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && 'code' in value && 'status' in value;
}

/** What went wrong, in words a member understands: never a raw code or JSON. */
export function describeError(error: unknown): string {
  if (!isProblem(error)) {
    if (!navigator.onLine || error instanceof TypeError) return 'You appear to be offline. Check your connection and try again.';
    return 'Something went wrong. Try again.';
  }
  switch (error.code) {
    case 'ERR_CONVERSATION_CLOSED':
      return 'This conversation was closed meanwhile. Reopen it to answer.';
    case 'ERR_CONVERSATION_NOT_CLOSED':
      return 'This conversation is open again already.';
    case 'ERR_CONFLICT':
      return 'Someone else changed this conversation meanwhile (taken or transferred). It now shows as it is.';
    case 'ERR_LITE_SEAT':
      return 'Your seat is read-only: you can read conversations but not answer or handle them.';
    case 'ERR_FORBIDDEN':
    case 'ERR_USER_TOKEN_REQUIRED':
      return 'You are not allowed to do this. Ask an admin of your team.';
    case 'ERR_PAYLOAD_TOO_LARGE':
      return 'That is too large to send. Shorten the message or pick a smaller file.';
    case 'ERR_RATE_LIMITED':
      return 'Too many requests at once. Wait a moment and try again.';
    case 'ERR_ASSIGNEE_LITE_SEAT':
      return 'That person has a read-only seat and cannot take conversations.';
    case 'ERR_DEPARTMENT_NO_AGENTS':
      return 'Nobody in that department can take the conversation right now.';
    case 'ERR_NOT_FOUND':
      return 'This no longer exists (deleted, or you lost access to it).';
    case 'ERR_UNAUTHENTICATED':
    case 'ERR_TOKEN_EXPIRED':
    case 'ERR_INVALID_TOKEN':
      return 'Your session has ended. Log in again.';
    case 'ERR_UNAVAILABLE':
    case 'ERR_INTERNAL':
      return 'The service is having trouble. Try again in a moment.';
    case 'ERR_VALIDATION':
      return error.errors?.length ? error.errors.map((e) => e.message).join('; ') : error.detail;
    default:
      return error.detail;
  }
}
