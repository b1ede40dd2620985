// Errors as the contract types them: every error answer is problem+json with a `code` from ErrorCode, so
// code comparisons are checked by the compiler (a misspelt code does not compile under `strict`).
import type { ErrorCode, Problem } from './contract.ts';

export class ChatApiError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'ChatApiError';
  readonly code: C;
  readonly status: number;
  /** The problem+json body; undefined when the answer was not one (a proxy's HTML 502, say). */
  readonly problem: Problem | undefined;

  constructor(code: C, status: number, detail: string, problem?: Problem) {
    super(`${code} (${status}): ${detail}`);
    this.code = code;
    this.status = status;
    this.problem = problem;
  }

  /** The service's id of the request, to quote when asking for help. */
  get requestId(): string | undefined {
    return this.problem?.request_id;
  }

  /** Per field, what was wrong (ERR_VALIDATION). */
  get fieldErrors(): NonNullable<Problem['errors']> {
    return this.problem?.errors ?? [];
  }

  /** Builds the error from an answer: its problem+json body, or, for one that is not (from a proxy), a code by its status. */
  static from(body: unknown, response: Pick<Response, 'status'>): ChatApiError {
    if (isProblem(body)) return new ChatApiError(body.code, response.status, body.detail, body);
    const detail = typeof body === 'string' && body.length > 0 ? body.slice(0, 200) : `HTTP ${response.status}`;
    return new ChatApiError(codeOfStatus(response.status), response.status, detail);
  }
}

/** True when `error` is a ChatApiError with one of `codes` (any code when none given); narrows `error.code`. */
export function isApiError<C extends ErrorCode = ErrorCode>(error: unknown, ...codes: C[]): error is ChatApiError<C> {
  return error instanceof ChatApiError && (codes.length === 0 || codes.includes(error.code as C));
}

type Result = { data?: unknown; error?: unknown; response: Response };
/** The data of an openapi-fetch result's success branch. */
export type DataOf<R> = R extends { data: infer D; error?: never } ? D : never;

/**
 * The data of an openapi-fetch call, or a thrown ChatApiError:
 * `const conversation = await ok(client.api.GET('/v1/conversations/{id}', { params: { path: { id } } }))`.
 */
export async function ok<R extends Result>(call: Promise<R>): Promise<DataOf<R>> {
  const result = await call;
  if (result.error !== undefined || !result.response.ok) throw ChatApiError.from(result.error, result.response);
  return result.data as DataOf<R>;
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && typeof (body as Problem).code === 'string' && typeof (body as Problem).detail === 'string';
}

function codeOfStatus(status: number): ErrorCode {
  const codes: Record<number, ErrorCode> = { 401: 'ERR_UNAUTHENTICATED', 403: 'ERR_FORBIDDEN', 404: 'ERR_NOT_FOUND', 405: 'ERR_METHOD_NOT_ALLOWED', 409: 'ERR_CONFLICT', 413: 'ERR_PAYLOAD_TOO_LARGE', 415: 'ERR_UNSUPPORTED_MEDIA_TYPE', 429: 'ERR_RATE_LIMITED', 502: 'ERR_UNAVAILABLE', 503: 'ERR_UNAVAILABLE', 504: 'ERR_UNAVAILABLE' };
  return codes[status] ?? (status >= 500 ? 'ERR_INTERNAL' : 'ERR_VALIDATION');
}
