import express, { type Router } from 'express';
import { createRequire } from 'node:module';
import type { Contract } from './contract.ts';

// Only the folder of swagger-ui's static files: the package's main entry would load its whole
// browser bundle into the server.
const swaggerUiDir = createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js')() as string;
// The AsyncAPI viewer's standalone bundle (React and the parser inside): served from node_modules, so
// the events page works offline.
const asyncApiBundle = createRequire(import.meta.url).resolve('@asyncapi/react-component/browser/standalone/index.js');
const asyncApiStyle = createRequire(import.meta.url).resolve('@asyncapi/react-component/styles/default.min.css');

// The contract as the service serves it (with itself as the first server): JSON, YAML, and rendered at
// /api/docs; the events' AsyncAPI document (standing alone: its references into chat.yaml brought in)
// at /api/asyncapi.yaml and .json, rendered at /api/docs/events.
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
  router.get(['/docs', '/docs/'], (_req, res) => {
    res.type('text/html').send(DOCS_PAGE);
  });
  router.get(['/docs/events', '/docs/events/'], (_req, res) => {
    res.type('text/html').send(EVENTS_PAGE);
  });
  router.get('/docs/events/asyncapi-standalone.js', (_req, res) => {
    res.type('text/javascript').sendFile(asyncApiBundle);
  });
  router.get('/docs/events/asyncapi.css', (_req, res) => {
    res.type('text/css').sendFile(asyncApiStyle);
  });
  router.use('/docs', express.static(swaggerUiDir, { index: false }));
  return router;
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Customer Chat API</title>
  <link rel="stylesheet" href="/api/docs/swagger-ui.css">
</head>
<body>
  <nav style="font: 14px sans-serif; padding: 8px 20px; background: #1b1b1b;">
    <a style="color: #fff;" href="/api/docs/events">Events (WebSocket): the AsyncAPI reference</a>
  </nav>
  <div id="docs"></div>
  <script src="/api/docs/swagger-ui-bundle.js"></script>
  <!-- validatorUrl null: Swagger UI would otherwise send the contract to an online validator. -->
  <script>window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#docs', deepLinking: true, validatorUrl: null });</script>
</body>
</html>
`;

const EVENTS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Customer Chat events (AsyncAPI)</title>
  <link rel="stylesheet" href="/api/docs/events/asyncapi.css">
</head>
<body>
  <nav style="font: 14px sans-serif; padding: 8px 20px;"><a href="/api/docs">REST API reference</a> · <a href="/api/asyncapi.yaml">asyncapi.yaml</a></nav>
  <div id="asyncapi"></div>
  <script src="/api/docs/events/asyncapi-standalone.js"></script>
  <script>AsyncApiStandalone.render({ schema: { url: '/api/asyncapi.json' }, config: { show: { sidebar: true } } }, document.getElementById('asyncapi'));</script>
</body>
</html>
`;
