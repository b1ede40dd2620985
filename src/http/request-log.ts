import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import pino, { type Level, type Logger } from 'pino';

declare module 'node:http' {
  interface IncomingMessage {
    /** The request's id: the caller's X-Request-Id when it is a sane one, or a new UUID. */
    id: string;
    /** The request logs' logger (credentials redacted): what logs a request's `req` goes through it. */
    log?: Logger;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export interface RequestLogOptions {
  /** The request's own fields on its line (who asked, what it was called, why it was refused). */
  fields(req: Request, res: Response): Record<string, unknown>;
}

/**
 * One line per request when its answer ends, in pino-http's shape (`req`, `res`, `duration_ms`, "request
 * completed"), at info, warn for 4xx, error for 5xx. Written by hand because pino-http builds a child
 * logger per request, serialising the request's headers through the redaction, before it knows whether a
 * line will be written, at a LOG_LEVEL that writes none as much as at one that does: a large share of a
 * GET's CPU under npm run bench:probe. Here the line is built only when its level is enabled.
 */
export function requestLog(logger: Logger, options: RequestLogOptions): RequestHandler {
  // Credentials never reach the logs.
  const lines = logger.child({}, { redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'] });
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    req.id = id;
    // A plain property: an accessor defined on each request turned it into a slow (dictionary-mode) object
    // for everything after.
    req.log = lines;
    const started = performance.now();
    const end = () => {
      res.off('finish', end);
      res.off('close', end);
      const level = levelOf(res);
      if (!lines.isLevelEnabled(level)) return;
      // Closed before its answer was all written: the client left, or the answer was cut off (a download
      // whose storage failed half way). The metrics call it `aborted` too.
      const aborted = !res.writableFinished;
      lines[level](
        {
          req: requestFields(req),
          res: pino.stdSerializers.res(res as ServerResponse),
          ...(res.statusCode >= 500 ? { err: new Error(`failed with status code ${res.statusCode}`) } : {}),
          duration_ms: Math.round(performance.now() - started),
          ...(aborted ? { aborted: true } : {}),
          ...options.fields(req, res),
        },
        aborted ? 'request aborted' : level === 'error' ? 'request errored' : 'request completed',
      );
    };
    res.on('finish', end);
    res.on('close', end);
    next();
  };
}

const levelOf = (res: Response): Level => (res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info');

/** The request as its log lines show it (pino's serialiser: id, method, url, headers, address). */
export const requestFields = (req: IncomingMessage) => pino.stdSerializers.req(req);
