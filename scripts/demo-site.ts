// A business's website with the chat bubble on it, served on its own origin: what `npm run demo` shows and
// what the browser tests open. `/` is a plain page; `/hostile` the same page under CSS that tries hard to
// restyle everything (the widget must look the same on both).
import { createServer, type Server } from 'node:http';

export interface DemoSite {
  /** The site as http://localhost:port (the widget's domain is `localhost`). */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface DemoSiteOptions {
  /** Where the service's /widget.js is. */
  scriptUrl: string;
  /** The widget on the page; `?widget=wgt_…` overrides it (the tests use one site for many widgets). */
  widgetId?: string;
  host?: string;
  port?: number;
}

/**
 * Rules a careless or hostile stylesheet could hold: every element, every button, every list and dialog,
 * the widget's own tag. (A transform or filter on <body> moves everything fixed on the page, any widget
 * included: no embedded script can undo that, so it is not among them.)
 */
export const HOSTILE_CSS = `
* { color: #ff00ff !important; font: italic 31px/3 "Comic Sans MS", serif !important; letter-spacing: 4px !important;
    background: yellow !important; box-sizing: content-box !important; border: 5px dashed red !important;
    padding: 13px !important; margin: 9px !important; text-align: right !important; text-transform: uppercase !important; }
button, textarea, input { width: 10px !important; height: 10px !important; display: inline !important; opacity: .3 !important; }
section, ol, li, div, form, [role], [hidden] { display: block !important; position: static !important; visibility: visible !important; }
chat-widget, chat-widget * { display: none !important; }
`;

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export interface PageOptions {
  widgetId: string;
  hostile: boolean;
  /** A signed-in user of the site, as its server would render them: queued for the widget before it loads. */
  identity?: { email: string; user_hash: string } | undefined;
}

export function demoPage(scriptUrl: string, page: PageOptions): string {
  const identify = page.identity ? `<script>window.ChatWidget = { q: [['identify', ${JSON.stringify(page.identity).replace(/</g, '\\u003c')}]] };</script>\n` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme Outdoor Gear</title>
<style>
  body { font-family: Georgia, serif; margin: 0; color: #222; background: #fafaf7; }
  header { background: #2f4f3a; color: #fff; padding: 24px 32px; }
  main { max-width: 720px; padding: 24px 32px; }
  .product { border: 1px solid #ddd; background: #fff; padding: 16px; margin: 12px 0; }
</style>
${page.hostile ? `<style id="hostile">${HOSTILE_CSS}</style>` : ''}
</head>
<body>
<header><h1 id="site-title">Acme Outdoor Gear</h1><p>Tents, packs and boots since 1998</p></header>
<main>
  <p id="intro">Questions about sizes, shipping or returns? Use the chat bubble in the corner.</p>
  <div class="product"><h2>Trailhead 2 tent</h2><p>Two people, 1.9 kg, three seasons. 249 EUR.</p></div>
  <div class="product"><h2>Ridge 40 pack</h2><p>40 litres, adjustable back. 139 EUR.</p></div>
</main>
${identify}<script src="${escapeAttr(scriptUrl)}" data-widget-id="${escapeAttr(page.widgetId)}" async></script>
</body>
</html>
`;
}

export async function startDemoSite(options: DemoSiteOptions): Promise<DemoSite> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    const widgetId = url.searchParams.get('widget') ?? options.widgetId;
    if ((url.pathname !== '/' && url.pathname !== '/hostile') || !widgetId) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found');
      return;
    }
    const email = url.searchParams.get('email');
    const hash = url.searchParams.get('user_hash');
    const html = demoPage(options.scriptUrl, { widgetId, hostile: url.pathname === '/hostile', identity: email && hash ? { email, user_hash: hash } : undefined });
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(html);
  });
  // Reached as localhost (the widget's domain) or as 127.0.0.1 (another origin, which the widget refuses).
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://localhost:${port}`,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
