// Debian's chromium driven by playwright-core for the tests of the service's own pages (mail links,
// docs): a fresh profile per browser, and every request the pages make recorded, so a test can show
// that nothing left loopback.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface PagesBrowser {
  context: BrowserContext;
  /** Every URL a page asked for that is not on loopback (each is refused). */
  external: string[];
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export async function openPagesBrowser(): Promise<PagesBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'chat-pages-browser-'));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: ARGS });
  const external: string[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (['data:', 'blob:', 'file:'].includes(url.protocol) || LOOPBACK.has(url.hostname)) return route.continue();
    external.push(url.href);
    return route.abort('blockedbyclient');
  });
  return {
    context,
    external,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
