import type { components } from '../../generated/api.ts';

export type ErrorCode = components['schemas']['ErrorCode'];

// The one error type services throw. It names what went wrong in domain terms; the HTTP layer decides
// how it is answered (src/http/problem.ts), so services never know about statuses or headers.
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly detail: string;
  /** Where the request broke the contract, as JSON pointers into it (`/body/email`): the HTTP layer's findings. */
  readonly fieldErrors: { path: string; message: string }[] | undefined;
  /** Inputs a service refused, by name (`cursor`, `timezone`; '' for the whole input): the HTTP layer locates them. */
  readonly invalidFields: { field: string; message: string }[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    detail: string,
    options: {
      fieldErrors?: { path: string; message: string }[];
      invalidFields?: { field: string; message: string }[];
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.detail = detail;
    this.fieldErrors = options.fieldErrors;
    this.invalidFields = options.invalidFields;
    this.headers = options.headers;
  }
}

export const INVALID_REQUEST = 'The request does not match the API contract';

/** Inputs that passed the contract but not the rules; named as the operation names them, never located. */
export const invalidInput = (...fields: { field: string; message: string }[]) => new AppError('ERR_VALIDATION', INVALID_REQUEST, { invalidFields: fields });

export const notFound = (what: string) => new AppError('ERR_NOT_FOUND', `${what} not found`);
export const conflict = (detail: string) => new AppError('ERR_CONFLICT', detail);
export const forbidden = (detail: string) => new AppError('ERR_FORBIDDEN', detail);
export const unauthenticated = (detail: string) => new AppError('ERR_UNAUTHENTICATED', detail);
