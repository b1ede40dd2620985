import express, { type Router } from 'express';
import { createRequire } from 'node:module';
import { stringify } from 'yaml';
import type { Contract } from './contract.ts';

// Only the folder of swagger-ui's static files: the package's main entry would load its whole
// browser bundle into the server.
const swaggerUiDir = createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js')() as string;

// The contract as the service serves it (with itself as the first server): JSON, YAML, and rendered at /api/docs.
export function contractDocsRouter(contract: Contract): Router {
  const router = express.Router();
  // A relative server first, so the rendered docs' requests go to this service wherever it runs (the
  // contract's own servers name localhost and the mock).
  const served = { ...contract.document, servers: [{ url: contract.basePath, description: 'This service' }, ...(contract.document.servers ?? [])] };
  const json = JSON.stringify(served);
  const yaml = stringify(served);
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(json);
  });
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(yaml);
  });
  router.get(['/docs', '/docs/'], (_req, res) => {
    res.type('text/html').send(DOCS_PAGE);
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
  <div id="docs"></div>
  <script src="/api/docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#docs', deepLinking: true });</script>
</body>
</html>
`;
