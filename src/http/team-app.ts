import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { type Router } from 'express';
import { AppError } from '../shared/errors.ts';

/** The built team app (app/, `npm run app:build`), committed so that a fresh clone serves it as is. */
export const APP_DIST = join(import.meta.dirname, '..', '..', 'app', 'dist');

/** What a member's browser downloads, gzipped, before the inbox shows (npm run app:check). */
export const APP_BUDGET_BYTES = 150 * 1024;

// No inline script or style anywhere: the build emits files only (app/vite.config.ts). connect-src
// 'self' covers the WebSocket on the same host and port.
export const APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

// The pages the app frames or opens with a chat bubble in them (app/public): the widget draws itself
// with a <style> element in its shadow root, which a CSP without 'unsafe-inline' styles would block.
// Their scripts are still files of this origin only.
export const BUBBLE_PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

/** Files of app/public the service serves beside the app: the widget's preview and the guide's test page. */
const BUBBLE_PAGES = ['widget-preview.html', 'widget-test.html'];
const BUBBLE_FILES = ['widget-preview.js', 'widget-test.js', 'widget-page.css'];

/**
 * The team app at /app: hashed assets cached for a year (a new build has new names), every other path
 * the app's index.html (its router reads the address), never cached, so a release reaches members at
 * their next load. The mail links (APP_URL/verify-email, /reset-password, /accept-invitation) are routes
 * of the app like any other.
 */
export function teamAppRouter(_basePath: string, dist = APP_DIST): Router {
  const router = express.Router({ strict: true });
  let index: string | undefined;
  router.get('/', (req, res, next) => {
    // /app without its slash: relative links in the app resolve against /app/.
    if (req.originalUrl.split('?')[0] === '/app') return res.redirect(301, '/app/');
    next();
  });
  router.use('/assets', express.static(join(dist, 'assets'), { index: false, immutable: true, maxAge: '365d', fallthrough: false, redirect: false }));
  for (const name of BUBBLE_PAGES) {
    router.get(`/${name}`, (_req, res) => {
      res.set({ 'Content-Security-Policy': BUBBLE_PAGE_CSP, 'Cache-Control': 'no-cache', 'Referrer-Policy': 'same-origin', 'X-Content-Type-Options': 'nosniff' });
      res.sendFile(join(dist, name));
    });
  }
  for (const name of BUBBLE_FILES) router.get(`/${name}`, (_req, res) => res.set('Cache-Control', 'no-cache').sendFile(join(dist, name)));
  router.get('/{*path}', (_req, res, next) => {
    if (index === undefined) {
      const file = join(dist, 'index.html');
      if (!existsSync(file)) return next(new AppError('ERR_NOT_FOUND', 'The team app is not built: run npm run app:build'));
      index = readFileSync(file, 'utf8');
    }
    res.set({
      'Content-Security-Policy': APP_CSP,
      'Cache-Control': 'no-cache',
      'Referrer-Policy': 'same-origin',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
    });
    res.type('text/html').send(index);
  });
  return router;
}
