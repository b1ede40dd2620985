// `npm run bench:reference`: the API reference in chromium, beside the page it replaced, in the same run.
// One process serves both: /api/docs (Redoc, src/http/reference.ts) and, under a bench-only path, the
// previous reference as it was served (Swagger UI from swagger-ui-dist, uncompressed, the contract loaded
// by the page). Each run opens the first operation's own link in a fresh browser context (nothing cached)
// and the page itself records when an element reading that operation's summary is first visible
// (performance.now(), from the request); the runs alternate old and new (BENCH_RUNS each, default 7), and
// the median counts. Also the script each page's browser received, in bytes on the wire (compressed when
// the server compressed it). Each page is requested once before the runs (the new one renders a page at
// its first request). Results: scripts/bench/results/reference.json.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import { chromium } from 'playwright-core';
import { loadContract } from '../../src/http/contract.ts';
import { contractDocsRouter } from '../../src/http/docs.ts';
import { writeResults } from './results.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const contract = loadContract();
const first = Object.values<Record<string, any>>(contract.document.paths)[0]!;
const firstOp = Object.values<Record<string, any>>(first).find((op) => op?.operationId)!;
const SUMMARY: string = firstOp.summary;
const TAG: string = firstOp.tags[0];

const swaggerDir = createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js')() as string;
const OLD_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Customer Chat API</title>
  <link rel="stylesheet" href="/bench/old-docs/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/bench/old-docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#docs', deepLinking: true, validatorUrl: null });</script>
</body>
</html>
`;

const app = express();
app.use(contract.basePath, contractDocsRouter(contract));
app.get('/bench/old-docs', (_req, res) => void res.type('text/html').send(OLD_PAGE));
app.use('/bench/old-docs', express.static(swaggerDir, { index: false }));
const server = createServer(app);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const pages = {
  new: `${base}${contract.basePath}/docs/${TAG}/${String(firstOp.operationId).toLowerCase()}`,
  old: `${base}/bench/old-docs#/${TAG}/${firstOp.operationId}`,
};

// In the page, before anything else: every frame, look for a laid-out, visible element whose own text is
// the operation's summary (anywhere on the page: Swagger UI shows it below its introduction), and keep the
// time of the first frame that shows one.
const WATCH = `(() => {
  const summary = ${JSON.stringify(SUMMARY)};
  const look = () => {
    const walker = document.createTreeWalker(document.body ?? document.documentElement, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.textContent.trim() !== summary) continue;
      const r = n.parentElement.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && getComputedStyle(n.parentElement).visibility === 'visible') return true;
    }
    return false;
  };
  const frame = () => { if (document.body && look()) { window.__readable = performance.now(); return; } requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
})();`;

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] });
async function measure(url: string): Promise<{ readableMs: number; scriptBytes: number }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.route('**/*', (route) => (new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort()));
  await context.addInitScript(WATCH);
  const page = await context.newPage();
  page.on('pageerror', (error) => console.error(`${url}: ${String(error)}`));
  let scriptBytes = 0;
  const sized: Promise<void>[] = [];
  page.on('requestfinished', (request) => {
    if (request.resourceType() !== 'script') return;
    sized.push(request.sizes().then((s) => void (scriptBytes += s.responseBodySize)));
  });
  await page.goto(url);
  await page.waitForFunction('window.__readable !== undefined', undefined, { timeout: 120_000, polling: 100 });
  const readableMs = (await page.evaluate('window.__readable')) as number;
  await page.waitForLoadState('load');
  await Promise.all(sized);
  await context.close();
  return { readableMs, scriptBytes };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

await measure(pages.new);
await measure(pages.old);
const runs: Record<'new' | 'old', { readableMs: number; scriptBytes: number }[]> = { new: [], old: [] };
for (let i = 0; i < RUNS; i++) {
  for (const which of i % 2 ? (['old', 'new'] as const) : (['new', 'old'] as const)) {
    const run = await measure(pages[which]);
    runs[which].push(run);
    console.log(`run ${i + 1} ${which}: first operation readable ${Math.round(run.readableMs)} ms, script ${Math.round(run.scriptBytes / 1024)} KiB on the wire`);
  }
}
await browser.close();
await new Promise((resolve) => server.close(resolve));

const figures = {
  'new.first_operation_ms': median(runs.new.map((r) => r.readableMs)),
  'old.first_operation_ms': median(runs.old.map((r) => r.readableMs)),
  'new.script_kib': median(runs.new.map((r) => r.scriptBytes)) / 1024,
  'old.script_kib': median(runs.old.map((r) => r.scriptBytes)) / 1024,
};
const all = { ...figures, 'ratio.first_operation_new_of_old': figures['new.first_operation_ms'] / figures['old.first_operation_ms'] };
console.table(all);
writeResults('reference', all, { runs: RUNS, operation: firstOp.operationId, pages: { new: pages.new.replace(base, ''), old: pages.old.replace(base, '') }, file: join('scripts', 'bench', 'reference.ts') });
