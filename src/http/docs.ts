import express, { type Request, type Response, type Router } from 'express';
import type { Contract } from './contract.ts';
import type { CompressedAsset, RenderedPage } from './reference.ts';

// The contract as the service serves it (with itself as the first server): JSON and YAML at
// /api/openapi.json and .yaml; the events' AsyncAPI document (standing alone: its references into
// chat.yaml brought in) at /api/asyncapi.yaml and .json. Both are rendered as one reference with Redoc
// (src/http/reference.ts): REST at /api/docs (docs/getting-started.md first), the events at
// /api/docs/events, each page its own URL rendered on the server. Each REST operation's page has a try-it
// panel (src/http/try-it-panel.js, its table at /api/docs/reference/try-it.json) that calls this service.
export function contractDocsRouter(contract: Contract): Router {
  const router = express.Router();
  // A relative server first, so the rendered docs' requests go to this service wherever it runs (the
  // contract's own servers name localhost and the mock).
  const served = { ...contract.document, servers: [{ url: contract.basePath, description: 'This service' }, ...(contract.document.servers ?? [])] };
  // Rendered at the first request, not at start: writing YAML was a noticeable part of every start, and the
  // YAML library itself loads only then.
  const once = <T>(make: () => Promise<T>) => {
    let made: Promise<T> | undefined;
    return () => (made ??= make());
  };
  const yaml = once(async () => (await import('yaml')).stringify(served));
  const asyncapi = once(async () => (await import('./asyncapi.ts')).loadAsyncApi(contract.document));
  const asyncapiYaml = once(async () => (await import('yaml')).stringify(await asyncapi()));
  const asyncapiJson = once(async () => JSON.stringify(await asyncapi()));
  const json = once(async () => JSON.stringify(served));
  router.get('/openapi.json', async (_req, res) => {
    res.type('application/json').send(await json());
  });
  router.get('/openapi.yaml', async (_req, res) => {
    res.type('application/yaml').send(await yaml());
  });
  router.get('/asyncapi.json', async (_req, res) => {
    res.type('application/json').send(await asyncapiJson());
  });
  router.get('/asyncapi.yaml', async (_req, res) => {
    res.type('application/yaml').send(await asyncapiYaml());
  });
  const docsBase = `${contract.basePath}/docs`;
  const panel = once(async () => (await import('./try-it.ts')).tryItPanel());
  // The reference module (React, Redoc) loads at the first request for a page of it.
  const reference = once(async () => {
    const { Reference, REDOC_VERSION, servedEventsDocument, servedRestDocument } = await import('./reference.ts');
    const { file: tryItFile } = await panel();
    return new Reference(
      { rest: servedRestDocument(contract.document, contract.basePath), events: servedEventsDocument(contract.document) },
      {
        basePaths: { rest: docsBase, events: `${docsBase}/events` },
        bundleUrl: `${docsBase}/assets/redoc-${REDOC_VERSION}.js`,
        documentUrls: { rest: `${docsBase}/reference/openapi.json`, events: `${docsBase}/reference/asyncapi.json` },
        nav: [
          { label: 'Getting started', href: `${docsBase}/getting-started` },
          { label: 'REST API', href: docsBase, kind: 'rest' },
          { label: 'Events (WebSocket)', href: `${docsBase}/events`, kind: 'events' },
          { label: 'openapi.yaml', href: `${contract.basePath}/openapi.yaml` },
          { label: 'asyncapi.yaml', href: `${contract.basePath}/asyncapi.yaml` },
        ],
        router: 'history',
        tryIt: { scriptUrl: `${docsBase}/assets/${tryItFile}`, operationsUrl: `${docsBase}/reference/try-it.json`, apiBase: contract.basePath },
      },
    );
  });
  const bundle = once(async () => {
    const { compressAsset, redocBundle } = await import('./reference.ts');
    return compressAsset(redocBundle());
  });
  const servedJson = (kind: 'rest' | 'events') => once(async () => (await import('./reference.ts')).compressAsset(JSON.stringify((await reference()).document(kind))));
  const restJson = servedJson('rest');
  const eventsJson = servedJson('events');
  const tryItScript = once(async () => (await import('./reference.ts')).compressAsset((await panel()).source));
  const tryItTable = once(async () => (await import('./reference.ts')).compressAsset(JSON.stringify(await (await reference()).tryItOperations())));
  router.get('/docs/assets/:file', async (req, res, next) => {
    const { REDOC_VERSION } = await import('./reference.ts');
    const file = req.params.file;
    const asset = file === `redoc-${REDOC_VERSION}.js` ? bundle : file === (await panel()).file ? tryItScript : undefined;
    if (!asset) return next();
    res.set('Cache-Control', 'public, max-age=31536000, immutable');
    sendCompressed(req, res, 'text/javascript', await asset());
  });
  router.get('/docs/reference/try-it.json', async (req, res) => sendCompressed(req, res, 'application/json', await tryItTable()));
  router.get('/docs/reference/openapi.json', async (req, res) => sendCompressed(req, res, 'application/json', await restJson()));
  router.get('/docs/reference/asyncapi.json', async (req, res) => sendCompressed(req, res, 'application/json', await eventsJson()));
  router.get(['/docs', '/docs/{*page}'], async (req, res, next) => {
    const docs = await reference();
    const path = `${contract.basePath}${req.path}`;
    const kind = await docs.kindOf(path);
    if (!kind) return next();
    sendPage(req, res, await docs.page(kind, path));
  });
  return router;
}

/** The smallest encoding the client takes. */
function encodingFor(req: Request): 'br' | 'gzip' | undefined {
  const accepted = String(req.headers['accept-encoding'] ?? '');
  return /\bbr\b/.test(accepted) ? 'br' : /\bgzip\b/.test(accepted) ? 'gzip' : undefined;
}

function sendCompressed(req: Request, res: Response, type: string, asset: CompressedAsset): void {
  const encoding = encodingFor(req);
  res.type(type).vary('Accept-Encoding');
  if (encoding) res.set('Content-Encoding', encoding);
  res.send(encoding ? asset[encoding] : asset.body);
}

function sendPage(req: Request, res: Response, page: RenderedPage): void {
  const encoding = encodingFor(req);
  res.type('text/html').vary('Accept-Encoding').set('Cache-Control', 'no-cache');
  if (encoding) res.set('Content-Encoding', encoding);
  res.send(encoding ? page[encoding] : page.html);
}
