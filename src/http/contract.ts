import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, RequestHandler, Response, Router } from 'express';
import type { operations } from '../../generated/api.ts';
import type { Principal } from './access.ts';

export const CONTRACT_PATH = new URL('../../openapi/chat.yaml', import.meta.url);
/** openapi/chat.yaml as JSON, written by `npm run gen` and checked in sync with it (`npm run gen:check`). */
export const CONTRACT_JSON_PATH = new URL('../../generated/contract.json', import.meta.url);

export type OperationId = keyof operations;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
type Method = (typeof METHODS)[number];

export interface OperationInfo {
  operationId: OperationId;
  method: Method;
  /** As written in the contract, relative to the server URL: /v1/tenants/{id} */
  path: string;
  /** `deprecated: true` with `x-deprecated-at` and `x-sunset` (dates): answered with Deprecation and Sunset headers. */
  deprecation?: { deprecatedAt: Date; sunset: Date };
}

export interface Contract {
  document: Record<string, any>;
  operations: OperationInfo[];
  basePath: string;
}

/** An operation's key for per-operation tables: "post /api/v1/workflows" (base path included). */
export const operationKeyOf = (contract: Contract, op: OperationInfo): string => `${op.method} ${contract.basePath}${op.path}`;

/** The key of the operation a request matched, once the validator's route lookup has run (see operationKeyOf). */
export const requestOperationKey = (req: Request): string =>
  `${req.method.toLowerCase()} ${(req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute}`;

export function loadContract(document: Record<string, any> = JSON.parse(readFileSync(CONTRACT_JSON_PATH, 'utf8'))): Contract {
  const operations: OperationInfo[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) operations.push({ operationId: op.operationId, method, path, ...deprecationOf(op, `${method.toUpperCase()} ${path}`) });
    }
  }
  return { document, operations, basePath: basePathOf(document) };
}

// A deprecated operation says when it goes away: `x-sunset` (a date), with `x-deprecated-at`, the date it
// was deprecated. Both, and only with `deprecated: true`; `npm run spec:diff` checks the sunset is
// six months ahead when the deprecation lands.
function deprecationOf(op: Record<string, any>, where: string): { deprecation?: { deprecatedAt: Date; sunset: Date } } {
  const marked = op['x-sunset'] !== undefined || op['x-deprecated-at'] !== undefined;
  if (!op.deprecated && !marked) return {};
  const date = (name: string) => {
    const value = op[name];
    const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : value instanceof Date ? value : undefined;
    if (!at || Number.isNaN(at.getTime())) throw new Error(`${where}: a deprecated operation needs ${name} as a date (YYYY-MM-DD), got ${JSON.stringify(value)}`);
    return at;
  };
  if (!op.deprecated) throw new Error(`${where}: x-sunset and x-deprecated-at belong to an operation with deprecated: true`);
  return { deprecation: { deprecatedAt: date('x-deprecated-at'), sunset: date('x-sunset') } };
}

/** The headers a deprecated operation answers with: Deprecation (RFC 9745) and Sunset (RFC 8594). */
export function deprecationHeaders(deprecation: { deprecatedAt: Date; sunset: Date }): Record<string, string> {
  return { Deprecation: `@${Math.floor(deprecation.deprecatedAt.getTime() / 1000)}`, Sunset: deprecation.sunset.toUTCString() };
}

// The path of the server URLs (`http://127.0.0.1:3000/api` -> `/api`), as express-openapi-validator
// derives it. Every server (the service, the mock) must share it: one URL space, whatever the host.
function basePathOf(document: Record<string, any>): string {
  const servers = (document.servers ?? []) as { url: string }[];
  const paths = new Set(servers.map((s) => new URL(s.url, 'http://relative.invalid').pathname.replace(/\/$/, '')));
  if (paths.size > 1) throw new Error(`the contract's servers have different base paths: ${[...paths].join(', ')}`);
  return [...paths][0] ?? '';
}

// ---- Types derived from the generated contract -------------------------------------------------------

type Op<K extends OperationId> = operations[K];
type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type OrEmpty<T> = [T] extends [never] ? Record<string, never> : [T] extends [undefined] ? Record<string, never> : NonNullable<T>;

export type PathParams<K extends OperationId> = OrEmpty<Op<K>['parameters']['path']>;
export type QueryParams<K extends OperationId> = OrEmpty<Op<K>['parameters']['query']>;
export type RequestBody<K extends OperationId> = Op<K> extends { requestBody: infer RB } ? JsonContent<RB> : undefined;

type SuccessStatus = 200 | 201 | 202 | 204;
type SuccessKeys<K extends OperationId> = Extract<keyof Op<K>['responses'], SuccessStatus>;

// A response the contract gives as bytes of any type (`*/*`, a file download) is answered with a stream.
type ReplyContent<R> = R extends { content: { '*/*': unknown } } ? { stream: Readable } : { body: JsonContent<R> };

/** What a handler answers: one of the operation's success responses, with the body the contract gives it. */
export type Reply<K extends OperationId> = {
  [S in SuccessKeys<K>]: { status: S; headers?: Record<string, string> } & ReplyContent<Op<K>['responses'][S]>;
}[SuccessKeys<K>];

export interface HandlerContext<K extends OperationId> {
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
  /** Set on every operation whose `security` is not empty. */
  principal: Principal | undefined;
  requestId: string;
  req: Request;
  res: Response;
}

export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<Reply<K>>;

/** One handler per operation of the contract: a missing one is a compile error. */
export type Handlers = { [K in OperationId]: Handler<K> };

export const principalOf = (res: Response): Principal | undefined => res.locals.principal as Principal | undefined;

/** What the validator found the request to be: its operation, and the path's parameters as it read them. */
const operationOf = (req: Request) =>
  (req as { openapi?: { schema: { operationId?: string }; pathParams: Record<string, string> } }).openapi;

// Puts every operation of the contract on the router: a request goes to the handler of the operation the
// validator matched it to; one no operation matched goes on (to the 404).

export function mountOperations(router: Router, contract: Contract, handlers: Handlers): void {
  const known = new Set<string>(contract.operations.map((o) => o.operationId));
  const strays = Object.keys(handlers).filter((id) => !known.has(id));
  if (strays.length > 0) throw new Error(`handlers for operations the contract does not have: ${strays.join(', ')}`);
  const byOperation = new Map<string, RequestHandler>();
  for (const op of contract.operations) {
    // At run time every handler is the same shape; the per-operation typing is for the compiler.
    const handler = handlers[op.operationId] as unknown as
      | ((ctx: HandlerContext<OperationId>) => Promise<{ status: number; body?: unknown; stream?: Readable; headers?: Record<string, string> }>)
      | undefined;
    if (!handler) throw new Error(`no handler for operation ${op.operationId}`);
    const deprecated = op.deprecation ? deprecationHeaders(op.deprecation) : undefined;
    byOperation.set(op.operationId, async (req, res) => {
      // Set first, so an error the handler throws is answered with them too.
      if (deprecated) res.set(deprecated);
      const reply = await handler({
        params: operationOf(req)!.pathParams as never,
        query: req.query as never,
        body: req.body as never,
        principal: principalOf(res),
        requestId: String(req.id),
        req,
        res,
      });
      for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
      res.status(reply.status);
      if (reply.stream) {
        // Headers are gone by now: a read failing half way can only cut the connection.
        await pipeline(reply.stream, res).catch(() => res.destroy());
      } else if (reply.body === undefined) res.end();
      else res.json(reply.body);
    });
  }
  // The validator has matched the request to its operation (src/http/route-lookup.ts) and checked it: the
  // handler is found by its operationId, where a route per operation had express try each path in turn.
  router.use((req, res, next) => {
    const operationId = operationOf(req)?.schema.operationId;
    const handle = operationId === undefined ? undefined : byOperation.get(operationId);
    if (!handle) return next();
    return handle(req, res, next);
  });
}
