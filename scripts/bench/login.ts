// Login benchmark: logins per second at the production bcrypt cost, and what logins running flat out do
// to a cheap authenticated GET (its p99 against its p99 with no logins running). Password hashing runs
// on worker threads, so the ratio should stay near 1 as long as a core is left for the event loop.
//
//   npm run bench:login                      # embedded PGlite
//   DATABASE_URL=postgres://... npm run bench:login
//   BENCH_SECONDS=10 BENCH_BCRYPT_COST=12 BENCH_LOGIN_CONNECTIONS=8 npm run bench:login
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import { startProcess } from './support.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const cost = process.env.BENCH_BCRYPT_COST ?? '12';
const loginConnections = Number(process.env.BENCH_LOGIN_CONNECTIONS ?? 8);
const getConnections = Number(process.env.BENCH_GET_CONNECTIONS ?? 4);

const service = await startProcess('src/server.ts', {
  NODE_ENV: 'development',
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
  DATA_DIR: process.env.DATA_DIR ?? '/tmp/chat-bench',
  BCRYPT_COST: cost,
  RATE_LIMIT_PER_MINUTE: '1000000',
  LOGIN_RATE_LIMIT: '1000000',
});

try {
  const email = `bench-${Date.now()}@example.test`;
  const password = 'benchmark password 1';
  const registered = await fetch(`${service.url}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password, name: 'Bench' }),
  }).then((r) => r.json() as Promise<{ access_token: string; tenant: { id: string } }>);
  const get = {
    url: `${service.url}/api/v1/tenants/${registered.tenant.id}`,
    headers: { Authorization: `Bearer ${registered.access_token}` },
    connections: getConnections,
    duration: seconds,
  };
  const login = {
    url: `${service.url}/api/v1/auth/login`,
    method: 'POST' as const,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
    connections: loginConnections,
    duration: seconds,
  };

  await autocannon({ ...get, duration: 2 }); // warm-up
  const alone = await autocannon(get);
  const [during, logins] = await Promise.all([autocannon(get), autocannon(login)]);

  const row = (label: string, r: autocannon.Result) =>
    `${label.padEnd(34)} ${r.requests.average.toFixed(0).padStart(8)} req/s   p50 ${String(r.latency.p50).padStart(5)} ms   p99 ${String(r.latency.p99).padStart(5)} ms   non-2xx ${r.non2xx}`;
  console.log(`\nlogin benchmark: bcrypt cost ${cost}, ${seconds} s per phase, ${cpus().length} cores, database ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}`);
  console.log(row(`GET tenant alone (${getConnections} conn)`, alone));
  console.log(row(`GET tenant during logins`, during));
  console.log(row(`POST login flat out (${loginConnections} conn)`, logins));
  console.log(`\nlogins per second: ${logins.requests.average.toFixed(1)}`);
  console.log(`GET p99 during logins / alone: ${(during.latency.p99 / Math.max(alone.latency.p99, 1)).toFixed(2)}`);
} finally {
  await service.stop();
}
