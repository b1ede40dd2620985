// `npm run docs [-- --out DIR]`: static pages of the contract that work offline, opened straight from
// disk: DIR/index.html (the REST contract in Swagger UI) and DIR/events.html (the WebSocket events,
// AsyncAPI), each with its document inlined and its viewer's files copied beside it. Default DIR: data/docs.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { loadAsyncApi } from '../src/http/asyncapi.ts';
import { loadContract } from '../src/http/contract.ts';

const args = process.argv.slice(2);
const at = args.indexOf('--out');
const out = resolve(at === -1 ? 'data/docs' : (args[at + 1] ?? 'data/docs'));
const require = createRequire(import.meta.url);
const swaggerUiDir = require('swagger-ui-dist/absolute-path.js')() as string;

mkdirSync(join(out, 'assets'), { recursive: true });
copyFileSync(join(swaggerUiDir, 'swagger-ui-bundle.js'), join(out, 'assets/swagger-ui-bundle.js'));
copyFileSync(join(swaggerUiDir, 'swagger-ui.css'), join(out, 'assets/swagger-ui.css'));
copyFileSync(require.resolve('@asyncapi/react-component/browser/standalone/index.js'), join(out, 'assets/asyncapi-standalone.js'));
copyFileSync(require.resolve('@asyncapi/react-component/styles/default.min.css'), join(out, 'assets/asyncapi.css'));

const { document } = loadContract();
// Inlined as a script's JSON: a page opened from disk may not fetch another file. `<` is escaped so no
// text in the documents can close the script element.
const inline = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c');

writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${document.info.title}</title>
  <link rel="stylesheet" href="assets/swagger-ui.css">
</head>
<body>
  <nav style="font: 14px sans-serif; padding: 8px 20px; background: #1b1b1b;"><a style="color: #fff;" href="events.html">Events (WebSocket): the AsyncAPI reference</a></nav>
  <div id="docs"></div>
  <script src="assets/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ spec: ${inline(document)}, dom_id: '#docs', deepLinking: true, validatorUrl: null });</script>
</body>
</html>
`,
);
writeFileSync(
  join(out, 'events.html'),
  `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Customer Chat events (AsyncAPI)</title>
  <link rel="stylesheet" href="assets/asyncapi.css">
</head>
<body>
  <nav style="font: 14px sans-serif; padding: 8px 20px;"><a href="index.html">REST API reference</a></nav>
  <div id="asyncapi"></div>
  <script src="assets/asyncapi-standalone.js"></script>
  <script>AsyncApiStandalone.render({ schema: ${inline(loadAsyncApi(document))}, config: { show: { sidebar: true } } }, document.getElementById('asyncapi'));</script>
</body>
</html>
`,
);
console.log(`offline docs in ${out}: index.html (REST), events.html (WebSocket events)`);
