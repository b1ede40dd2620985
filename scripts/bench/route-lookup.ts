// The cost of finding a request's operation in the contract, over the same requests, in one process:
// express-openapi-validator's own lookup (it tries the contract's paths in turn, compiling each), the same
// scan with each path's matcher compiled once and kept (what the app did until 2026-11-25), and the lookup
// the app installs (src/http/route-lookup.ts: only the paths with as many segments, compiled once).
//   npm run bench:route-lookup
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import pino from 'pino';
import { createApp } from '../../src/app.ts';
import { PasswordHasher } from '../../src/auth/password.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { openDatabase } from '../../src/db/database.ts';
import { bothMetadataMiddlewares, validatorRoutes } from '../../src/http/route-lookup.ts';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200_000);
const ID = 'conv_01a214ed-bd7d-779d-a76b-f3edc0314e42';
const REQUESTS: [string, string][] = [
  ['GET', '/api/v1/conversations?limit=20'],
  ['GET', `/api/v1/conversations/${ID}`],
  ['POST', '/api/v1/messages'],
  ['POST', `/api/v1/conversations/${ID}/close`],
  ['POST', `/api/v1/widget/conversations/${ID}/messages`],
  ['GET', '/api/v1/nowhere'],
];

// The validator's path-to-regexp, as its scan calls it: replaced for the middle column by a version that
// keeps each compiled matcher.
type Compile = (path: string, options: { sensitive: boolean; strict: boolean }) => unknown;
const pathToRegexpModule = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'))('path-to-regexp') as { pathToRegexp: Compile };
const compileAfresh = pathToRegexpModule.pathToRegexp;
const kept = new Map<string, unknown>();
const compileKept: Compile = (path, options) => {
  const key = `${path}\u0000${options.sensitive}\u0000${options.strict}`;
  let matcher = kept.get(key);
  if (matcher === undefined) kept.set(key, (matcher = compileAfresh(path, options)));
  return matcher;
};

const database = await openDatabase({ databaseUrl: 'pglite://memory', dataDir: tmpdir(), poolMax: 1 });
const passwords = new PasswordHasher(4, 1);
const app = createApp({
  config: { validateResponses: true, appUrl: 'http://bench', rateLimits: { perMinute: 1_000_000, login: 1_000_000, forgotPassword: 1_000_000, widgetSessions: 1_000_000, widgetConversations: 1_000_000, widgetMessages: 1_000_000, widgetUploads: 1_000_000 }, trustProxy: false, requireHttps: false },
  logger: pino({ level: 'silent' }),
  database,
  tokens: new TokenService('bench-secret-that-is-long-enough-for-hs256-0123456789'),
  passwords,
  mailer: { send: async () => undefined, close: async () => undefined },
});
const server = app.listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
// The validator builds its lookup at the first request.
await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/conversations`);
const both = bothMetadataMiddlewares();
if (!both) throw new Error('the route lookup was not built');

const requestFor = (method: string, url: string) => ({ method, url, originalUrl: url, baseUrl: '', path: url.split('?')[0], params: {}, app });
function perLookupNs(mw: (req: never, res: never, next: () => void) => void, method: string, url: string): number {
  const req = requestFor(method, url);
  const run = (n: number) => {
    for (let i = 0; i < n; i++) {
      try {
        mw(req as never, {} as never, () => undefined);
      } catch {
        // 404 for the unknown path: thrown as the validator throws it, and timed the same.
      }
    }
  };
  run(ITERATIONS / 10);
  const started = process.hrtime.bigint();
  run(ITERATIONS);
  return Number(process.hrtime.bigint() - started) / ITERATIONS;
}

console.log(`route lookup: ${validatorRoutes().length} routes in the contract, ${ITERATIONS} lookups each\n`);
const µs = (ns: number, width: number) => `${(ns / 1000).toFixed(2)} µs`.padStart(width);
console.log(`${'request'.padEnd(60)} validator's scan   the scan, matchers kept    indexed`);
for (const [method, url] of REQUESTS) {
  const original = perLookupNs(both.original, method, url);
  pathToRegexpModule.pathToRegexp = compileKept;
  const scanKept = perLookupNs(both.original, method, url);
  pathToRegexpModule.pathToRegexp = compileAfresh;
  const indexed = perLookupNs(both.indexed, method, url);
  const label = `${method} ${url.replace(ID, '{id}')}`;
  console.log(`${label.padEnd(60)} ${µs(original, 16)} ${µs(scanKept, 25)} ${µs(indexed, 10)}`);
}
server.close();
await passwords.close();
await database.close();
