// The browser tests' helpers: Debian's chromium driven by playwright-core, a fresh profile per context,
// and a switch that cuts the service's visitor sockets (and refuses new ones) while it is on.
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { type BrowserContext, chromium, type LaunchOptions, type Page } from 'playwright-core';

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

export interface Browsing {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A browser with a profile of its own (nothing carried over between tests), at a viewport. */
export async function openBrowser(options: { viewport?: { width: number; height: number }; isMobile?: boolean } = {}): Promise<Browsing> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'chat-widget-browser-'));
  const launch: LaunchOptions = { executablePath: CHROMIUM, headless: true, args: ARGS };
  const context = await chromium.launchPersistentContext(userDataDir, {
    ...launch,
    viewport: options.viewport ?? { width: 1280, height: 800 },
    ...(options.isMobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface SocketCutter {
  /** Drops every open socket it watches and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  /** Puts the server's own upgrade listeners back. */
  uninstall(): void;
  /** The query strings of the upgrades it watches that reached the server, in order. */
  upgrades: URLSearchParams[];
}

/**
 * Wraps the server's upgrade listeners. A refused upgrade is destroyed before the gateway sees it, as a
 * network failure would; an open one is destroyed under the gateway, which sees the socket close. Only the
 * upgrades whose query names `credential` are cut: the visitor's (`visitor_token`) or a member's (`ticket`).
 */
export function socketCutter(server: Server, credential: 'visitor_token' | 'ticket' = 'visitor_token'): SocketCutter {
  const listeners = server.listeners('upgrade') as ((req: IncomingMessage, socket: Duplex, head: Buffer) => void)[];
  const open = new Set<Duplex>();
  const upgrades: URLSearchParams[] = [];
  let cut = false;
  const wrapper = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
    if (query.has(credential)) {
      upgrades.push(query);
      if (cut) return void socket.destroy();
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    }
    for (const listener of listeners) listener.call(server, req, socket, head);
  };
  server.removeAllListeners('upgrade');
  server.on('upgrade', wrapper);
  return {
    upgrades,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    uninstall() {
      server.removeListener('upgrade', wrapper);
      for (const listener of listeners) server.on('upgrade', listener);
    },
  };
}

/** The page's console errors and uncaught errors, as they come: a test checks them at its end. */
export function errorsOf(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  return errors;
}
