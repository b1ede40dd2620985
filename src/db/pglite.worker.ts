// Runs in a worker thread (src/db/pglite-thread.ts): the embedded database (PGlite, PostgreSQL compiled to
// WebAssembly) on a thread of its own, so that its work and the service's JavaScript use two cores instead
// of taking turns on one, and so that it opens while the service loads. Statements arrive in the order
// the service's one connection sends them and run one after another, each answered in turn.
//
// PGlite's code is imported only once Node's compile cache is on for this thread, as src/server.ts does
// for the service: statically imported, it would be compiled again at every start before this line ran.
import { enableCompileCache } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import type { PGliteThreadOptions, PGliteThreadReply, PGliteThreadRequest, SentError } from './pglite-thread.ts';

enableCompileCache();
const [{ PGlite }, { pg_trgm }, { PGlitePool }] = await Promise.all([
  import('@electric-sql/pglite'),
  import('@electric-sql/pglite/contrib/pg_trgm'),
  import('./pglite-pool.ts'),
]);

const INT8_OID = 20;
const parseInt8 = (value: string) => Number(value);

function sendable(err: unknown): SentError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  return { ...Object.fromEntries(Object.entries(err)), name: err.name, message: err.message, stack: err.stack };
}

const port = parentPort!;
const options = workerData as PGliteThreadOptions;

try {
  // pg_trgm ships with PGlite as a contrib bundle: search's partial words (src/search/).
  const pglite = await PGlite.create({ dataDir: options.dataDir, parsers: { [INT8_OID]: parseInt8 }, extensions: { pg_trgm } });
  // Each statement says whether it runs by name (decided on the service's thread); they run one at a time.
  let named = false;
  const pool = new PGlitePool(pglite, { prepare: () => named });
  const client = await pool.connect();
  let queue: Promise<unknown> = Promise.resolve();
  port.on('message', (request: PGliteThreadRequest) => {
    if (request.type === 'close') {
      queue = queue.then(async () => {
        if (!pglite.closed) await pglite.close();
        port.postMessage({ type: 'closed' } satisfies PGliteThreadReply);
        port.close();
      });
      return;
    }
    queue = queue.then(async () => {
      try {
        named = request.named;
        const result = await client.query(request.sql, request.parameters);
        port.postMessage({ type: 'result', id: request.id, command: result.command, rowCount: result.rowCount, rows: result.rows } satisfies PGliteThreadReply);
      } catch (err) {
        port.postMessage({ type: 'error', id: request.id, error: sendable(err) } satisfies PGliteThreadReply);
      }
    });
  });
  port.postMessage({ type: 'ready' } satisfies PGliteThreadReply);
} catch (err) {
  port.postMessage({ type: 'failed', error: sendable(err) } satisfies PGliteThreadReply);
  port.close();
}
