import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestHandler } from 'express';
import { AppError } from '../shared/errors.ts';

/** The built chat bubble (widget/, `npm run widget:build`), committed so a fresh clone serves it as is. */
export const WIDGET_BUNDLE = join(import.meta.dirname, '..', '..', 'widget', 'dist', 'widget.js');

/** What a visitor may have to download, gzipped, before the bubble appears (npm run widget:check). */
export const WIDGET_BUDGET_BYTES = 30 * 1024;

/**
 * GET /widget.js: the script sites embed. Read once; an ETag lets browsers revalidate cheaply, and a short
 * max-age lets a new release reach every site within minutes without versioned URLs in their HTML.
 */
export function widgetScript(path = WIDGET_BUNDLE): RequestHandler {
  let bundle: { body: Buffer; etag: string } | undefined;
  return (req, res, next) => {
    try {
      if (!bundle) {
        const body = readFileSync(path);
        bundle = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      }
    } catch {
      return next(new AppError('ERR_NOT_FOUND', 'The widget is not built: run npm run widget:build'));
    }
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('ETag', bundle.etag);
    // Embedded by other origins, including pages that isolate themselves (COEP).
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (req.get('if-none-match') === bundle.etag) return void res.status(304).end();
    res.send(bundle.body);
  };
}
