import type { NextFunction, Request, Response } from 'express';
import { requireFromValidator } from './validator-internals.ts';

// express-openapi-validator 5.6 finds a request's operation (applyOpenApiMetadata, its first middleware)
// by trying every path of the contract in turn, at every request, and for each it compiles the path with
// path-to-regexp, reads two app settings and builds its route pair before matching (upstream pull request
// #1217 caches the compiles): the work grows with the contract's paths, even with each compile cached
// (npm run bench:route-lookup compares the two lookups).
//
// This is the same middleware with the paths compiled once and grouped by their number of segments: a
// path's literal segments and `:params` each match exactly one segment (a parameter never spans a `/`), so
// a request can only match the paths with as many segments as it has, after the one trailing slash that
// non-strict routing allows. Those are tried in the validator's own order, so the first match is the same
// one. Everything else (what is ignored, 404 and 405, the params, a malformed escape as 400) is as in the
// validator's own middleware. Remove this when the validator looks routes up without the scan.

type Schema = unknown;
interface RouteMethods {
  basePath: string;
  _openApiRoute: string;
  _expressRoute: string;
  [method: string]: Schema;
}
interface OpenApiContext {
  expressRouteMap: Record<string, RouteMethods>;
  openApiRouteMap: Record<string, RouteMethods>;
  apiDoc: { paths: Record<string, Record<string, Schema>> };
  useRequestUrl: boolean;
  ignoreUndocumented: boolean;
  serial: number;
  shouldIgnoreRoute(path: string): boolean;
  isManagedRoute(path: string): boolean;
}
type ResponseDoc = { paths: Record<string, Record<string, Schema>> } | undefined;
type Middleware = (req: Request, res: Response, next: NextFunction) => void;

interface CompiledRoute {
  expressRoute: string;
  openApiRoute: string;
  pathKey: string;
  regexp: RegExp;
  keys: string[];
  /** A path path-to-regexp refused: thrown when a lookup reaches it, as the validator's scan would. */
  error?: unknown;
}

const NEVER = /$^/;

const PATCHED = Symbol.for('customer-chat.route-lookup');

const validatorModule = requireFromValidator('./openapi.validator.js') as {
  OpenApiValidator: { prototype: { metadataMiddleware(context: unknown, responseApiDoc: unknown): Middleware } & { [PATCHED]?: true } };
};
const { pathToRegexp } = requireFromValidator('path-to-regexp') as {
  pathToRegexp: (path: string, options: { sensitive: boolean; strict: boolean }) => { regexp: RegExp; keys: { name: string }[] };
};
type HttpErrorClass = new (args: Record<string, unknown>) => Error;
const { BadRequest, MethodNotAllowed, NotFound } = requireFromValidator('./framework/types.js') as { BadRequest: HttpErrorClass; MethodNotAllowed: HttpErrorClass; NotFound: HttpErrorClass };
const { httpMethods } = requireFromValidator('./middlewares/parsers/schema.preprocessor.js') as { httpMethods: Set<string> };

/** How many segments a route or a request path has: `/a/b` and `/a/b/` both have two. */
export function segmentCount(path: string): number {
  let n = 0;
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  for (let i = 0; i < end; i++) if (path.charCodeAt(i) === 47) n++;
  return n;
}

// A route a segment count cannot place, tried for every request: a wildcard or an optional group, or a
// route ending in `/` (path-to-regexp 8 lets any route end in one more slash, strict or not, and for such a
// route that is one more segment).
const unplaceable = (route: string) => /[*{}()?+]/.test(route) || (route.length > 1 && route.endsWith('/'));

/** The contract's routes compiled for one pair of routing settings, grouped by segment count, each group in the validator's order. */
function compileRoutes(context: OpenApiContext, options: { sensitive: boolean; strict: boolean }): (path: string) => CompiledRoute[] {
  const bySegments = new Map<number, CompiledRoute[]>();
  const everywhere: { at: number; route: CompiledRoute }[] = [];
  const placed: { at: number; segments: number; route: CompiledRoute }[] = [];
  Object.entries(context.expressRouteMap).forEach(([expressRoute, methods], at) => {
    const openApiRoute = methods._openApiRoute;
    const route: CompiledRoute = { expressRoute, openApiRoute, pathKey: openApiRoute.substring(methods.basePath.length), regexp: NEVER, keys: [] };
    try {
      const compiled = pathToRegexp(expressRoute, options);
      route.regexp = compiled.regexp;
      route.keys = compiled.keys.map((k) => k.name);
    } catch (err) {
      route.error = err;
    }
    if (route.error !== undefined || unplaceable(expressRoute)) everywhere.push({ at, route });
    else placed.push({ at, segments: segmentCount(expressRoute), route });
  });
  for (const { segments } of placed) {
    if (bySegments.has(segments)) continue;
    const group = [...placed.filter((p) => p.segments === segments), ...everywhere].sort((a, b) => a.at - b.at).map((p) => p.route);
    bySegments.set(segments, group);
  }
  const rest = everywhere.map((e) => e.route);
  return (path) => bySegments.get(segmentCount(path)) ?? rest;
}

function indexedMetadata(context: OpenApiContext, responseApiDoc: ResponseDoc): Middleware {
  const compiled = new Map<string, (path: string) => CompiledRoute[]>();
  const candidates = (req: Request, path: string) => {
    const options = { sensitive: Boolean(req.app.enabled('case sensitive routing')), strict: Boolean(req.app.enabled('strict routing')) };
    const key = `${options.sensitive}:${options.strict}`;
    let lookup = compiled.get(key);
    if (!lookup) {
      lookup = compileRoutes(context, options);
      compiled.set(key, lookup);
    }
    return lookup(path);
  };

  const lookupRoute = (req: Request) => {
    const path = (context.useRequestUrl ? req.url : req.originalUrl).split('?')[0]!;
    const method = req.method.toLowerCase();
    for (const route of candidates(req, path)) {
      if (route.error !== undefined) throw route.error;
      const found = route.regexp.exec(path);
      if (!found) continue;
      let values: string[];
      try {
        values = found.slice(1).map(decodeURIComponent);
      } catch {
        throw new BadRequest({ path: req.path, message: `malformed uri'` });
      }
      const pathParams: Record<string, string> = {};
      route.keys.forEach((name, i) => {
        pathParams[name] = values[i]!;
      });
      return {
        schema: context.apiDoc.paths[route.pathKey]![method],
        responseSchema: responseApiDoc?.paths[route.pathKey]![method],
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        pathParams,
      };
    }
    return null;
  };

  return (req, _res, next) => {
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (context.shouldIgnoreRoute(path)) return next();
    const matched = lookupRoute(req);
    if (matched) {
      const { expressRoute, openApiRoute, pathParams, schema } = matched;
      if (!schema) {
        // Matched the path, not the method.
        if (context.ignoreUndocumented) return next();
        throw new MethodNotAllowed({
          path: req.path,
          message: `${req.method} method not allowed`,
          headers: { Allow: Object.keys(context.openApiRouteMap[openApiRoute]!).filter((key) => httpMethods.has(key.toLowerCase())).join(', ') },
        });
      }
      const openapi: Record<string, unknown> = { expressRoute, openApiRoute, pathParams, schema, serial: context.serial };
      if (responseApiDoc) openapi._responseSchema = matched.responseSchema;
      (req as Request & { openapi: unknown }).openapi = openapi;
      req.params = pathParams;
    } else if (context.isManagedRoute(path) && !context.ignoreUndocumented) {
      throw new NotFound({ path: req.path, message: 'not found' });
    }
    next();
  };
}

/** Makes express-openapi-validator look operations up by segment count instead of its scan (see above). */
export function indexRouteLookup(): void {
  const proto = validatorModule.OpenApiValidator.prototype;
  if (proto[PATCHED]) return;
  proto.metadataMiddleware = (context, responseApiDoc) => {
    built = { context, responseApiDoc };
    return indexedMetadata(context as OpenApiContext, responseApiDoc as ResponseDoc);
  };
  proto[PATCHED] = true;
}

let built: { context: unknown; responseApiDoc: unknown } | undefined;

/**
 * For the test: both middlewares, the validator's own and this one, over the context the validator last
 * built (after an app's first request), to compare their lookups.
 */
export function bothMetadataMiddlewares(): { original: Middleware; indexed: Middleware } | undefined {
  if (!built) return undefined;
  const original = requireFromValidator('./middlewares/openapi.metadata.js') as { applyOpenApiMetadata(context: unknown, responseApiDoc: unknown): Middleware };
  return {
    original: original.applyOpenApiMetadata(built.context, built.responseApiDoc),
    indexed: indexedMetadata(built.context as OpenApiContext, built.responseApiDoc as ResponseDoc),
  };
}

/** For the test: both middlewares over a context made of the given routes (OpenAPI paths under `basePath`, each with its methods). */
export function bothMetadataMiddlewaresFor(basePath: string, paths: Record<string, string[]>): { original: Middleware; indexed: Middleware } {
  const { OpenApiContext } = requireFromValidator('./framework/openapi.context.js') as { OpenApiContext: new (...args: unknown[]) => OpenApiContext };
  const original = requireFromValidator('./middlewares/openapi.metadata.js') as { applyOpenApiMetadata(context: unknown, responseApiDoc: unknown): Middleware };
  const apiDoc = { paths: Object.fromEntries(Object.entries(paths).map(([path, methods]) => [path, Object.fromEntries(methods.map((m) => [m, { operationId: `${m}${path}` }]))])) };
  const routes = Object.entries(paths).flatMap(([path, methods]) =>
    methods.map((method) => ({ basePath, openApiRoute: `${basePath}${path}`, expressRoute: `${basePath}${path}`.replace(/\{([^}]+)\}/g, ':$1'), method: method.toUpperCase(), pathParams: [] })),
  );
  const context = new OpenApiContext({ apiDoc, basePaths: [basePath], routes, serial: 0 }, undefined, false, false);
  return { original: original.applyOpenApiMetadata(context, undefined), indexed: indexedMetadata(context, undefined) };
}

/** For the test: the route strings of the contract as the validator keeps them (express form). */
export const validatorRoutes = (): string[] => Object.keys((built?.context as OpenApiContext | undefined)?.expressRouteMap ?? {});
