import type { RequestHandler } from 'express';
import { AppError } from '../shared/errors.ts';
import { type Contract, operationKeyOf, requestOperationKey } from './contract.ts';

// A request body on an operation whose contract declares none (close, reopen, every GET and DELETE)
// is a 400. express-openapi-validator checks only bodies the contract declares and lets any other
// through to the handler, which ignored it: the service answered 200 to what the mock and a validating
// proxy refuse. A body that is never read would also mislead its sender (`{"note": "..."}` on close
// was silently dropped). Any body counts, `{}` included: the contract says there is none.
export function undeclaredBody(contract: Contract): RequestHandler {
  const bodiless = bodilessOperations(contract);
  return (req, _res, next) => {
    if (bodiless.has(requestOperationKey(req)) && hasBody(req.headers)) {
      throw new AppError('ERR_VALIDATION', 'This operation takes no request body', {
        fieldErrors: [{ path: '/body', message: 'must be absent: the operation declares no request body' }],
      });
    }
    next();
  };
}

/**
 * Runs the body parser for operations that declare a body, once the request's operation is known. A
 * bodiless operation never reads one, so whatever its size the body is the 400 above: parsed first, a body
 * over the parser's limit was a 413, an answer those operations do not declare. (Node drops an unread body
 * after the answer.)
 */
export function declaredBodyParser(contract: Contract, parse: RequestHandler): RequestHandler {
  const bodiless = bodilessOperations(contract);
  return (req, res, next) => (bodiless.has(requestOperationKey(req)) ? next() : parse(req, res, next));
}

function bodilessOperations(contract: Contract): Set<string> {
  const bodiless = new Set<string>();
  for (const op of contract.operations) {
    if (!contract.document.paths[op.path][op.method].requestBody) bodiless.add(operationKeyOf(contract, op));
  }
  return bodiless;
}

// As Node's HTTP parser decides whether a message has a body: a non-zero Content-Length, or chunks.
function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (length !== undefined && Number(length) !== 0) return true;
  return headers['transfer-encoding'] !== undefined;
}
