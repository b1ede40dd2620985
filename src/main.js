// The entry point of `npm start` and the image: the service as src/server.ts starts it, with tracing first
// when OTEL_EXPORTER_OTLP_ENDPOINT is set (as src/telemetry/preload.ts does for `node --import`).
//
// JavaScript, not TypeScript, so that Node's compile cache is on before the first TypeScript module
// loads: a restart then takes every module's code, its types already stripped, from the cache, and
// Node's TypeScript stripper (a WebAssembly module) is never loaded. `node src/server.ts` starts the same
// service but loads the stripper at every start for its own first file.
import { enableCompileCache } from 'node:module';
import process from 'node:process';
import { useDependencyBundles } from './dependency-bundles.js';

const cache = enableCompileCache();
useDependencyBundles();
// Threads (the embedded database's, the password pool's) then have it on from their first module too.
if (cache.directory) process.env.NODE_COMPILE_CACHE ??= cache.directory;
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  // Before anything imports pg or http, which tracing hooks.
  const { startTracing } = await import('./telemetry/tracing.ts');
  startTracing(process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
}
const { main } = await import('./server.ts');
await main();
