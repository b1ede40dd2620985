// `npm run bench:reference`: the API reference in chromium, beside the page it replaced, in the same run.
// One process serves both: /api/docs (Redoc, src/http/reference.ts) and, under a bench-only path, the
// previous reference as it was served (Swagger UI from swagger-ui-dist, uncompressed, the contract loaded
// by the page). Each run opens the first operation's own link in a fresh browser context (nothing cached)
// and the page itself records when an element reading that operation's summary is first visible
// (performance.now(), from the request); the runs alternate old and new (BENCH_RUNS each, default 7), and
// the median counts. Each pair is recorded as well (per_run: its two times, their ratio, its script), so
// that docs/benchmarks.md's medians count the runs one by one rather than one median per invocation. Also
// the script each page's browser received, in bytes on the wire (compressed when the server compressed
// it). Each page is requested once before the runs (the new one renders a page at its first request).
// Results: scripts/bench/results/reference.json.
//
// With BENCH_ALTERNATIVES=DIR, the REST references Redoc was chosen over are measured in the same runs:
// Scalar (@scalar/api-reference's standalone bundle) and Stoplight Elements (@stoplight/elements' web
// component), from DIR/node_modules (they are not dependencies of the project: `npm install --prefix DIR
// @scalar/api-reference @stoplight/elements`). Each is served as we would serve it: its files compressed
// (brotli) and the contract (/api/openapi.json) loaded by the page, opened at the operation's own link
// (Scalar: at its top, where the first operation follows the introduction).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, resolve } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
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

type Which = 'new' | 'old' | 'scalar' | 'elements';
const alternativesDir = process.env.BENCH_ALTERNATIVES ? resolve(process.env.BENCH_ALTERNATIVES, 'node_modules') : undefined;
const ALTERNATIVES = {
  scalar: {
    dir: '@scalar/api-reference/dist/browser',
    page: `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Customer Chat API</title></head>
<body>
  <div id="app"></div>
  <script src="/bench/scalar/standalone.js"></script>
  <script>Scalar.createApiReference('#app', { url: '/api/openapi.json', withDefaultFonts: false, telemetry: false });</script>
</body>
</html>
`,
    // Its own page at the top: one page for the whole document, its introduction first, then the first
    // tag's operations, which it renders at once (deeper ones as the reader scrolls).
    link: '',
  },
  elements: {
    dir: '@stoplight/elements',
    page: `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Customer Chat API</title>
  <link rel="stylesheet" href="/bench/elements/styles.min.css">
  <script src="/bench/elements/web-components.min.js"></script>
</head>
<body>
  <elements-api apiDescriptionUrl="/api/openapi.json" router="hash" layout="sidebar"></elements-api>
</body>
</html>
`,
    link: `#/operations/${firstOp.operationId}`,
  },
} as const;
const compressed = new Map<string, Buffer>();
if (alternativesDir) {
  for (const [name, alternative] of Object.entries(ALTERNATIVES)) {
    const dir = join(alternativesDir, alternative.dir);
    if (!existsSync(dir)) throw new Error(`BENCH_ALTERNATIVES: no ${dir}`);
    app.get(`/bench/${name}`, (_req, res) => void res.type('text/html').send(alternative.page));
    app.get(`/bench/${name}/{*file}`, (req, res, next) => {
      const file = join(dir, ...(req.params as { file: string[] }).file);
      if (!file.startsWith(dir) || !existsSync(file)) return next();
      let body = compressed.get(file);
      if (!body) compressed.set(file, (body = brotliCompressSync(readFileSync(file), { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } })));
      res.type(extname(file)).set('Content-Encoding', 'br').send(body);
    });
  }
}
const server = createServer(app);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const pages: Partial<Record<Which, string>> & Record<'new' | 'old', string> = {
  new: `${base}${contract.basePath}/docs/${TAG}/${String(firstOp.operationId).toLowerCase()}`,
  old: `${base}/bench/old-docs#/${TAG}/${firstOp.operationId}`,
  ...(alternativesDir ? { scalar: `${base}/bench/scalar${ALTERNATIVES.scalar.link}`, elements: `${base}/bench/elements${ALTERNATIVES.elements.link}` } : {}),
};
const measured = Object.keys(pages) as Which[];

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

for (const which of measured) await measure(pages[which]!);
const runs = Object.fromEntries(measured.map((which) => [which, [] as { readableMs: number; scriptBytes: number }[]])) as Record<Which, { readableMs: number; scriptBytes: number }[]>;
for (let i = 0; i < RUNS; i++) {
  // Each run starts with the next page: each page goes first as often as another (new and old alternate).
  for (const which of [...measured.slice(i % measured.length), ...measured.slice(0, i % measured.length)]) {
    const run = await measure(pages[which]!);
    runs[which].push(run);
    console.log(`run ${i + 1} ${which}: first operation readable ${Math.round(run.readableMs)} ms, script ${Math.round(run.scriptBytes / 1024)} KiB on the wire`);
  }
}
await browser.close();
await new Promise((resolve) => server.close(resolve));

/** The figures of some runs (their medians), or of one run (i, its own): each page's and its ratio to the old page's. */
function figuresOf(pick: (list: { readableMs: number; scriptBytes: number }[]) => { readableMs: number; scriptBytes: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const which of measured) {
    const r = pick(runs[which]);
    out[`${which}.first_operation_ms`] = r.readableMs;
    out[`${which}.script_kib`] = r.scriptBytes / 1024;
  }
  for (const which of measured) if (which !== 'old') out[`ratio.first_operation_${which}_of_old`] = out[`${which}.first_operation_ms`]! / out['old.first_operation_ms']!;
  return out;
}
const all = figuresOf((list) => ({ readableMs: median(list.map((r) => r.readableMs)), scriptBytes: median(list.map((r) => r.scriptBytes)) }));
console.table(all);
// The ratio of a run is taken within the run: the pages opened one after the other.
const perRun = Array.from({ length: RUNS }, (_, i) => figuresOf((list) => list[i]!));
const shownPages = Object.fromEntries(measured.map((which) => [which, pages[which]!.replace(base, '')]));
writeResults('reference', all, { per_run: perRun, runs: RUNS, operation: firstOp.operationId, pages: shownPages, file: join('scripts', 'bench', 'reference.ts') });
