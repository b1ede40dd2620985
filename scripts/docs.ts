// `npm run docs [-- --out DIR]`: the API reference as static pages that work offline, opened straight from
// disk: DIR/index.html (the REST contract, with docs/getting-started.md first and a curl and TypeScript
// sample beside every operation) and DIR/events.html (the WebSocket events), both rendered by Redoc as the
// service renders /api/docs (src/http/reference.ts), each with its document and Redoc's bundle inlined (a
// page opened from disk may load no module). Default DIR: data/docs. The contract's links to the service's
// reference pages (`/api/docs/...`, `/api/docs/events/...`, in its introduction and its tags) become links
// between these files (a message's own anchor in the events page, which the hash router cannot hold,
// becomes its channel's page). The pages have no try-it panel: opened from disk, there is no service to
// call.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadContract } from '../src/http/contract.ts';
import { Reference, redocBundle, servedEventsDocument, servedRestDocument } from '../src/http/reference.ts';

const args = process.argv.slice(2);
const at = args.indexOf('--out');
const out = resolve(at === -1 ? 'data/docs' : (args[at + 1] ?? 'data/docs'));
mkdirSync(out, { recursive: true });

const { document, basePath } = loadContract();
const docsBase = `${basePath}/docs`;
/** A Markdown link to a page of the service's reference, as a link to that page in these files. */
const offlineLinks = (markdown: string) =>
  markdown.replace(/\]\((\/[^)\s#]*)(?:#[^)\s]*)?\)/g, (whole, href: string) => {
    if (href === `${docsBase}/events` || href.startsWith(`${docsBase}/events/`)) return `](events.html#/${href.slice(`${docsBase}/events/`.length)})`;
    if (href === docsBase || href.startsWith(`${docsBase}/`)) return `](index.html#/${href.slice(`${docsBase}/`.length)})`;
    return whole;
  });
// The samples' API variable is the server's URL; the pages name the service's default.
const rest = servedRestDocument(document, `http://127.0.0.1:3000${basePath}`, { description: 'A service on its defaults' });
for (const tag of rest.tags ?? []) if (typeof tag.description === 'string') tag.description = offlineLinks(tag.description);
if (typeof rest.info?.description === 'string') rest.info = { ...rest.info, description: offlineLinks(rest.info.description) };
const reference = new Reference(
  { rest, events: servedEventsDocument(document) },
  {
    basePaths: { rest: '/', events: '/' },
    bundleUrl: '',
    documentUrls: { rest: '', events: '' },
    nav: [
      { label: 'Getting started', href: 'index.html#/getting-started' },
      { label: 'REST API', href: 'index.html', kind: 'rest' },
      { label: 'Events (WebSocket)', href: 'events.html', kind: 'events' },
    ],
    router: 'hash',
    inline: { bundle: redocBundle() },
  },
);
writeFileSync(join(out, 'index.html'), (await reference.page('rest', '/')).html);
writeFileSync(join(out, 'events.html'), (await reference.page('events', '/')).html);
console.log(`offline docs in ${out}: index.html (getting started and the REST reference), events.html (WebSocket events)`);
