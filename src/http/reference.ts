// The API reference, REST and events in one look: Redoc 3 (Redocly's, the npm `redoc` package) renders
// both the OpenAPI and the AsyncAPI document with the same layout, sidebar and search. Each page is
// rendered on the server (React's renderToString with Redoc's own components), so the operation a link
// names is readable as soon as its HTML arrives; Redoc's browser bundle then hydrates it (search,
// tabs, copy buttons, navigation without reloads). Pages are rendered at their first request and kept.
//
// The served documents are the contract plus what only readers need: every operation's code samples
// (`x-codeSamples`, src/http/code-samples.ts), docs/getting-started.md as the first section of the
// sidebar, and this service as the first server. Nothing leaves the machine: the bundle is served from
// node_modules with Redocly's logo (an image from their CDN) replaced by an inline one, telemetry is off,
// and no font is loaded. Redoc's free edition has no try-it: the REST pages load ours
// (src/http/try-it-panel.js, src/http/try-it.ts), which adds itself to each operation once React has hydrated it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { loadAsyncApi } from './asyncapi.ts';
import { withCodeSamples } from './code-samples.ts';
import { type TryItOperation, tryItOperations } from './try-it.ts';

type Doc = Record<string, any>;
export type ReferenceKind = 'rest' | 'events';

const require = createRequire(import.meta.url);
// Loaded untyped, by a name the compiler does not follow: React's types declare stand-ins for the DOM's
// HTMLElement and SVGElement that would take the place of the ones the browser tests' page code is typed by.
const load = (name: string): Promise<any> => import(name);
export const REDOC_VERSION = (require('redoc/package.json') as { version: string }).version;
const GETTING_STARTED_PATH = new URL('../../docs/getting-started.md', import.meta.url);

/** The tag docs/getting-started.md becomes in the served reference (a section with no operations). */
export const GETTING_STARTED_TAG = 'getting-started';
/** Renamed in the served reference: under /api/docs its pages would take /api/docs/events, the events' page. */
const RENAMED_TAGS: Record<string, string> = { events: 'event-feed' };

/**
 * The REST document as the reference serves it: samples, the getting-started page, grouped tags, and one
 * server, the one the reader calls (`server`: this service, or for pages opened from disk a service on
 * its defaults). The contract's own servers are left out: its mock (`npm run mock`) is a contributor's
 * tool on their own machine, the default address is what the served server already names, and their
 * descriptions speak to contributors in Markdown that Redoc shows as plain text.
 */
export function servedRestDocument(contract: Doc, basePath: string, server = { description: 'This service' }, gettingStarted = readFileSync(GETTING_STARTED_PATH, 'utf8')): Doc {
  const document = withCodeSamples({ ...contract, servers: [{ url: basePath, description: server.description }] });
  for (const item of Object.values<Doc>(document.paths ?? {})) {
    for (const op of Object.values<Doc>(item)) if (Array.isArray(op?.tags)) op.tags = op.tags.map((t: string) => RENAMED_TAGS[t] ?? t);
  }
  const tags: Doc[] = (document.tags ?? []).map((t: Doc) => (RENAMED_TAGS[t.name] ? { ...t, name: RENAMED_TAGS[t.name], 'x-displayName': t['x-displayName'] ?? t.name } : t));
  // The page's own title is the sidebar's entry; its sections (## headings) become entries under it.
  const body = gettingStarted.replace(/^# .*\n+/, '');
  document.tags = [{ name: GETTING_STARTED_TAG, 'x-displayName': 'Getting started', description: body, 'x-traitTag': true }, ...tags];
  document['x-tagGroups'] = [
    { name: 'Start here', tags: [GETTING_STARTED_TAG] },
    { name: 'REST reference', tags: tags.map((t) => t.name) },
  ];
  return document;
}

/** The events' AsyncAPI document as the reference serves it (standing alone, chat.yaml's schemas inside). */
export function servedEventsDocument(contract: Doc): Doc {
  return loadAsyncApi(contract);
}

interface Prepared {
  items: unknown[];
  store: unknown;
  options: Doc;
  document: Doc;
  /** Every page's path (basePath-relative links), to answer 404 for others. */
  links: Set<string>;
  /** The pages that are an operation's. */
  operationLinks: string[];
}

export interface RenderedPage {
  html: string;
  /** The same, compressed once for every reader. */
  br: Buffer;
  gzip: Buffer;
}

export interface ReferenceOptions {
  /** Where each document's pages live: `/api/docs` and `/api/docs/events`. */
  basePaths: Record<ReferenceKind, string>;
  /** The URL of Redoc's bundle and of each served document, as the page's script asks for them. */
  bundleUrl: string;
  documentUrls: Record<ReferenceKind, string>;
  /** Links between the two documents and the raw contracts, in the bar above both. */
  nav: { label: string; href: string; kind?: ReferenceKind }[];
  /** 'history' (the service: each page its own URL, rendered on the server) or 'hash' (files opened from disk). */
  router: 'history' | 'hash';
  /** Inline the bundle and the document in the page (files opened from disk cannot load modules). */
  inline?: { bundle: string };
  /**
   * The try-it panel on the REST pages (src/http/try-it-panel.js): its script's URL, its table of
   * operations' URL, and the URL the contract's paths are relative to (relative: this service).
   */
  tryIt?: { scriptUrl: string; operationsUrl: string; apiBase: string };
}

const OPTIONS: Doc = {
  disableTelemetry: true,
  hideLoading: true,
  jsonSamplesExpandLevel: 2,
  sortRequiredPropsFirst: true,
  // The samples' languages, in the labels code-samples.ts gives them (Redoc shows only the languages listed).
  codeSamples: { languages: [{ lang: 'curl', label: 'curl' }, { lang: 'TypeScript', label: 'TypeScript (SDK)' }] },
};

const pack = promisify(brotliCompress);
const packGzip = promisify(gzip);

/** Renders and keeps the reference's pages; one per process. */
export class Reference {
  readonly #documents: Record<ReferenceKind, Doc>;
  readonly #options: ReferenceOptions;
  readonly #prepared = new Map<ReferenceKind, Promise<Prepared>>();
  readonly #pages = new Map<string, Promise<RenderedPage>>();
  static readonly PAGES_KEPT = 300;

  constructor(documents: Record<ReferenceKind, Doc>, options: ReferenceOptions) {
    this.#documents = documents;
    this.#options = options;
  }

  document(kind: ReferenceKind): Doc {
    return this.#documents[kind];
  }

  /** Which document a path is a page of, or undefined (a 404). */
  async kindOf(path: string): Promise<ReferenceKind | undefined> {
    const clean = path.replace(/\/+$/, '') || '/';
    for (const kind of ['events', 'rest'] as const) {
      const base = this.#options.basePaths[kind];
      if (clean !== base && !clean.startsWith(`${base}/`)) continue;
      if ((await this.#prepare(kind)).links.has(clean.toLowerCase())) return kind;
    }
    return undefined;
  }

  /** The try-it panel's table: every REST operation that has a page, with its parameters and example body. */
  async tryItOperations(): Promise<TryItOperation[]> {
    return tryItOperations(this.#documents.rest, (await this.#prepare('rest')).operationLinks);
  }

  /** Every page path of a document. */
  async pages(kind: ReferenceKind): Promise<string[]> {
    return [...(await this.#prepare(kind)).links];
  }

  /** The page at `path` (a link of `kind`'s document), rendered once. */
  page(kind: ReferenceKind, path: string): Promise<RenderedPage> {
    const key = `${kind} ${path.replace(/\/+$/, '').toLowerCase() || '/'}`;
    let page = this.#pages.get(key);
    if (!page) {
      if (this.#pages.size >= Reference.PAGES_KEPT) this.#pages.delete(this.#pages.keys().next().value!);
      page = this.#render(kind, path);
      page.catch(() => this.#pages.delete(key));
      this.#pages.set(key, page);
    }
    return page;
  }

  #prepare(kind: ReferenceKind): Promise<Prepared> {
    let prepared = this.#prepared.get(kind);
    if (!prepared) {
      prepared = (async () => {
        const { prepareApiDocs } = await load('redoc');
        const basePath = this.#options.basePaths[kind];
        const result = await prepareApiDocs({ spec: this.#documents[kind], options: { ...OPTIONS } as never, basePath });
        const links = new Set<string>([basePath]);
        const operationLinks: string[] = [];
        const walk = (items: Doc[]) => {
          for (const item of items) {
            if (typeof item.link === 'string') links.add(item.link.toLowerCase());
            if (typeof item.link === 'string' && item.httpVerb) operationLinks.push(item.link.toLowerCase());
            if (Array.isArray(item.items)) walk(item.items);
          }
        };
        walk(result.items as Doc[]);
        return { items: result.items, store: result.store, options: result.options as Doc, document: result.document as Doc, links, operationLinks };
      })();
      prepared.catch(() => this.#prepared.delete(kind));
      this.#prepared.set(kind, prepared);
    }
    return prepared;
  }

  async #render(kind: ReferenceKind, path: string): Promise<RenderedPage> {
    const prepared = await this.#prepare(kind);
    const [{ createElement }, { renderToString }, { MemoryRouter }, { ServerStyleSheet }, redoc] = await Promise.all([
      load('react'),
      load('react-dom/server'),
      load('react-router'),
      load('styled-components'),
      load('redoc'),
    ]);
    const basePath = this.#options.basePaths[kind];
    const docs = createElement(redoc.RedoclyApiDocsStandalone, {
      items: prepared.items,
      store: prepared.store,
      basePath,
      options: prepared.options,
      logo: redoc.logoFromSpec(prepared.document),
      telemetryConfig: { disabled: true },
      spec: prepared.document,
    });
    const sheet = new ServerStyleSheet();
    let markup: string;
    let styles: string;
    try {
      const at = this.#options.router === 'history' ? path : basePath;
      markup = renderToString(sheet.collectStyles(createElement(MemoryRouter, { initialEntries: [at] }, docs)));
      styles = sheet.getStyleTags();
    } finally {
      sheet.seal();
    }
    const html = this.#html(kind, markup, styles);
    const [br, gz] = await Promise.all([pack(html, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }), packGzip(html)]);
    return { html, br, gzip: gz };
  }

  #html(kind: ReferenceKind, markup: string, styles: string): string {
    const o = this.#options;
    const title = kind === 'rest' ? `${this.#documents.rest.info?.title ?? 'API'} reference` : `${this.#documents.events.info?.title ?? 'Events'} (WebSocket)`;
    const options = { ...OPTIONS, router: o.router, basePath: o.basePaths[kind] };
    // The module loads after the page shows (modules are deferred); it hydrates what the server rendered.
    const script = o.inline
      ? `${o.inline.bundle.replace(/<\/(script)/gi, '<\\/$1')}\nhydrate(${inlineJson(this.#documents[kind])}, ${inlineJson(options)}, document.getElementById('redoc'));`
      : `import { hydrate } from ${JSON.stringify(o.bundleUrl)};\nhydrate(${JSON.stringify(o.documentUrls[kind])}, ${inlineJson(options)}, document.getElementById('redoc'));`;
    // The try-it panel: a classic deferred script, so it runs after the module above (Redoc's hydration).
    const tryIt =
      kind === 'rest' && o.tryIt
        ? `\n<script defer src="${escapeAttribute(o.tryIt.scriptUrl)}" data-operations="${escapeAttribute(o.tryIt.operationsUrl)}" data-api="${escapeAttribute(o.tryIt.apiBase)}" data-docs="${escapeAttribute(o.basePaths.rest)}"></script>`
        : '';
    const nav = o.nav.map((n) => `<a href="${escapeAttribute(n.href)}"${n.kind === kind ? ' aria-current="page"' : ''}>${escapeText(n.label)}</a>`).join('');
    return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeText(title)}</title>
<style>
body { margin: 0; padding: 0; }
.reference-nav { display: flex; gap: 20px; align-items: center; height: 40px; padding: 0 24px; font: 14px/1 system-ui, sans-serif; border-bottom: 1px solid #e4e7eb; background: #f6f8fa; }
.reference-nav a { color: #1f2937; text-decoration: none; padding: 12px 0; }
.reference-nav a[aria-current="page"] { font-weight: 600; border-bottom: 2px solid #2563eb; }
</style>
${o.inline ? '' : `<link rel="modulepreload" href="${escapeAttribute(o.bundleUrl)}">`}
${styles}
</head>
<body>
<nav class="reference-nav" aria-label="API reference">${nav}</nav>
<div id="redoc">${markup}</div>
<script type="module">
${script}
</script>${tryIt}
</body>
</html>
`;
  }
}

/** JSON inside a script element: nothing in it may close the element. */
const inlineJson = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c').replace(/\u2028|\u2029/g, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'));
const escapeText = (s: string) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);
const escapeAttribute = (s: string) => escapeText(s).replace(/"/g, '&quot;');

/** An inline image for Redocly's "API docs by" badge, which the bundle would fetch from their CDN. */
const LOGO = `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16"><text x="0" y="12" font-family="sans-serif" font-size="12" fill="#0044d4">Redocly</text></svg>')}`;

/** Redoc's browser bundle as served: its logo URLs made inline, so the page asks nothing of the network. */
export function redocBundle(): string {
  const source = readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
  const patched = source.replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(?:-full)?\.svg/g, LOGO);
  if (/https:\/\/cdn\.redoc\.ly/.test(patched)) throw new Error('redoc.standalone.js names another file on cdn.redoc.ly: serve it locally too');
  return patched;
}

export interface CompressedAsset {
  body: Buffer;
  br: Buffer;
  gzip: Buffer;
}

/** Compressed once, in the thread pool (brotli at quality 9: most of 11's gain at a fifteenth of the time). */
export async function compressAsset(text: string): Promise<CompressedAsset> {
  const body = Buffer.from(text);
  const [br, gz] = await Promise.all([pack(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }), packGzip(body, { level: 9 })]);
  return { body, br, gzip: gz };
}
