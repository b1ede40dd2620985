import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { requestFields } from './request-log.ts';
import { asUnavailable, isVanishedReference } from '../db/errors.ts';
import { AppError, type ErrorCode, INVALID_REQUEST } from '../shared/errors.ts';

const STATUS: Record<ErrorCode, number> = {
  ERR_VALIDATION: 400,
  ERR_TRANSFER_TARGET: 400,
  ERR_UNAUTHENTICATED: 401,
  ERR_TOKEN_EXPIRED: 401,
  ERR_INVALID_REFRESH_TOKEN: 401,
  ERR_INVALID_TOKEN: 400,
  ERR_PLAN_LIMIT: 402,
  ERR_FORBIDDEN: 403,
  ERR_USER_TOKEN_REQUIRED: 403,
  ERR_LITE_SEAT: 403,
  ERR_HTTPS_REQUIRED: 403,
  ERR_NOT_FOUND: 404,
  ERR_METHOD_NOT_ALLOWED: 405,
  ERR_CONVERSATION_CLOSED: 409,
  ERR_CONVERSATION_NOT_CLOSED: 409,
  ERR_DEPARTMENT_NO_AGENTS: 409,
  ERR_CONFLICT: 409,
  ERR_IDEMPOTENCY_MISMATCH: 409,
  ERR_BILLING_NOT_CONFIGURED: 409,
  ERR_PAYLOAD_TOO_LARGE: 413,
  ERR_UNSUPPORTED_MEDIA_TYPE: 415,
  ERR_USER_NOT_IN_TENANT: 422,
  ERR_ASSIGNEE_LITE_SEAT: 422,
  ERR_INVALID_DEPARTMENT: 422,
  ERR_INVALID_ATTACHMENT: 422,
  ERR_RATE_LIMITED: 429,
  ERR_INTERNAL: 500,
  ERR_UNAVAILABLE: 503,
};

const TITLE: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const PROBLEM_TYPE_BASE = 'https://docs.customer-chat.dev/errors/';

export const statusOf = (code: ErrorCode): number => STATUS[code];

interface ValidatorError {
  status: number;
  message?: string;
  errors?: { path?: string; message?: string }[];
}

// express-openapi-validator's HttpError and body-parser's errors both carry a numeric status.
const isHttpishError = (err: unknown): err is ValidatorError & { type?: string } =>
  typeof err === 'object' && err !== null && typeof (err as { status?: unknown }).status === 'number';

// Maps anything thrown into the AppError it stands for. Unknown errors become ERR_INTERNAL and keep
// their details out of the answer (they are logged instead).
export function toAppError(err: unknown): { error: AppError; unexpected: boolean } {
  if (err instanceof AppError) return { error: err, unexpected: false };
  // A lost database is the service being unavailable for a moment, not a failure of this request's code.
  const unavailable = asUnavailable(err);
  if (unavailable) return { error: unavailable, unexpected: false };
  if (isVanishedReference(err)) {
    // Answered as what it is for the client, and logged as unexpected: a race, or a check the code lacks.
    return { error: new AppError('ERR_NOT_FOUND', 'Something this request names was removed while it was being handled'), unexpected: true };
  }
  if (isHttpishError(err)) {
    const bodyParserType = (err as { type?: string }).type;
    if (bodyParserType === 'entity.too.large') {
      return { error: new AppError('ERR_PAYLOAD_TOO_LARGE', 'The request body is larger than 1048576 bytes'), unexpected: false };
    }
    if (bodyParserType === 'entity.parse.failed') {
      return {
        error: new AppError('ERR_VALIDATION', 'The request body is not valid JSON', {
          fieldErrors: [{ path: '/body', message: 'is not valid JSON' }],
        }),
        unexpected: false,
      };
    }
    if (bodyParserType === 'charset.unsupported' || bodyParserType === 'encoding.unsupported') {
      return { error: new AppError('ERR_UNSUPPORTED_MEDIA_TYPE', err.message ?? 'Unsupported body encoding'), unexpected: false };
    }
    switch (err.status) {
      case 400:
        return {
          error: new AppError('ERR_VALIDATION', INVALID_REQUEST, {
            fieldErrors: (err.errors ?? []).map((e) => ({
              path: normalisePath(e.path),
              message: e.message ?? 'is invalid',
            })),
          }),
          unexpected: false,
        };
      case 404:
        return { error: new AppError('ERR_NOT_FOUND', 'No such route'), unexpected: false };
      case 405:
        return { error: new AppError('ERR_METHOD_NOT_ALLOWED', 'The route does not support this method'), unexpected: false };
      case 413:
        return { error: new AppError('ERR_PAYLOAD_TOO_LARGE', 'The request body is too large'), unexpected: false };
      case 415:
        return { error: new AppError('ERR_UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json'), unexpected: false };
    }
  }
  return {
    error: new AppError('ERR_INTERNAL', 'An unexpected error occurred; quote the request id when reporting it'),
    unexpected: true,
  };
}

// The validator names places as "/body/email" or ".body.email", and path parameters "/params/id";
// answer JSON pointers throughout, with the locations OpenAPI uses (path, query, headers, body).
function normalisePath(path: string | undefined): string {
  if (!path) return '/';
  const pointer = path.startsWith('/') ? path : '/' + path.replace(/^\./, '').replaceAll('.', '/');
  return pointer.replace(/^\/params(?=\/|$)/, '/path');
}

/** Where in the request a named input sits: its query, its path, or (otherwise) its body. */
export interface RequestInputs {
  query?: Record<string, unknown>;
  params?: Record<string, unknown>;
}

function locate(field: string, request: RequestInputs | undefined): string {
  if (field === '') return '/body';
  if (request?.query && field in request.query) return `/query/${field}`;
  if (request?.params && field in request.params) return `/path/${field}`;
  return `/body/${field}`;
}

export function problemBody(error: AppError, requestId: string, request?: RequestInputs) {
  const status = statusOf(error.code);
  const errors = [...(error.fieldErrors ?? []), ...(error.invalidFields ?? []).map((f) => ({ path: locate(f.field, request), message: f.message }))];
  return {
    type: PROBLEM_TYPE_BASE + error.code,
    title: TITLE[status] ?? 'Error',
    status,
    code: error.code,
    detail: error.detail,
    request_id: requestId,
    ...(errors.length > 0 ? { errors } : {}),
  };
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const { error: found, unexpected } = toAppError(err);
    const error = mediaTypeNamed(found, req);
    const requestId = String(req.id ?? '');
    if (unexpected) {
      // The request's headers only through the request log's redaction (req.log, src/http/request-log.ts).
      if (req.log) req.log.error({ err, request_id: requestId, req: requestFields(req) }, 'unexpected error');
      else logger.error({ err, request_id: requestId }, 'unexpected error');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = problemBody(error, requestId, req);
    // The request log line names the refusal (src/http/request-log.ts).
    res.locals.problemCode = body.code;
    for (const [name, value] of Object.entries(error.headers ?? {})) res.setHeader(name, value);
    if (body.status === 401 && !res.hasHeader('WWW-Authenticate')) res.setHeader('WWW-Authenticate', 'Bearer');
    res.status(body.status).type('application/problem+json').send(JSON.stringify(body));
  };
}

// The validator refuses a body of another type without saying which one the operation takes: an upload
// (multipart/form-data) is told so, not to send JSON.
function mediaTypeNamed(error: AppError, req: object): AppError {
  if (error.code !== 'ERR_UNSUPPORTED_MEDIA_TYPE') return error;
  const declared = Object.keys(((req as { openapi?: unknown }).openapi as { schema?: { requestBody?: { content?: object } } } | undefined)?.schema?.requestBody?.content ?? {});
  return declared.length === 1 && declared[0] !== 'application/json' ? new AppError(error.code, `Send the body as ${declared[0]}`) : error;
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new AppError('ERR_NOT_FOUND', 'No such route'));
};
