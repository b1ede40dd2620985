import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Metrics } from '../metrics/metrics.ts';
import { AppError } from '../shared/errors.ts';

/**
 * What a request is called in metrics and logs: its operationId; a route outside the contract by its
 * template (`GET /api/metrics`); a path nothing matched as one label, `unmatched`, never the raw URL
 * (each probe of a scanner would be a new series); anything else answered by middleware (CORS
 * preflights, the docs' static files) as `other`.
 */
export function operationOf(req: Request, status: number): string {
  const operationId = (req as { openapi?: { schema?: { operationId?: unknown } } }).openapi?.schema?.operationId;
  if (typeof operationId === 'string') return operationId;
  const route = req.route as { path?: unknown } | undefined;
  if (route && (typeof route.path === 'string' || Array.isArray(route.path))) {
    return `${req.method} ${req.baseUrl}${[route.path].flat()[0] as string}`;
  }
  return status === 404 || status === 405 ? 'unmatched' : 'other';
}

/** Counts and times every request, labelled by operation and status, when its answer ends. */
export function requestMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    let recorded = false;
    const record = () => {
      if (recorded) return;
      recorded = true;
      // A client that left before the answer ended is counted apart from the statuses it never saw.
      const status = res.writableFinished ? String(res.statusCode) : 'aborted';
      const labels = { operation: operationOf(req, res.statusCode), status };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}

/**
 * GET /api/metrics for Prometheus, behind a bearer token (docs/operations.md, Metrics). Mounted only
 * when a token is configured: without one the path answers 404 like any unknown path.
 */
export function metricsEndpoint(metrics: Metrics, token: string): RequestHandler {
  const expected = digest(token);
  return (req, res, next) => {
    const match = /^Bearer\s+(\S+)$/i.exec(req.get('authorization') ?? '');
    // Digests of equal length: the comparison takes the same time whatever was sent.
    if (!match?.[1] || !timingSafeEqual(digest(match[1]), expected)) {
      return next(new AppError('ERR_UNAUTHENTICATED', 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>'));
    }
    metrics.render().then((text) => {
      res.setHeader('Cache-Control', 'no-store');
      res.type(metrics.contentType).send(text);
    }, next);
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();
