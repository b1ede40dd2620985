// HTTP benchmark of GET /v1/conversations, GET /v1/conversations/{id} and POST /v1/messages, at 10
// thousand and at a million conversations in one tenant, beside a baseline of plain node:http + pg
// running the same statements in the same transactions (scripts/bench/baseline-server.ts). The app
// runs twice, with response validation on (the default) and off. Every server is a process of its own.
//
//   DATABASE_URL=postgres://user@127.0.0.1:5432/db npm run bench:conversations
//   BENCH_SIZES=10000,1000000 BENCH_SECONDS=10 BENCH_CONNECTIONS=10 ...
import { writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pino from 'pino';
import { createApp } from '../../src/app.ts';
import { PasswordHasher } from '../../src/auth/password.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { seedConversations } from './seed-conversations.ts';
import { startProcess } from './support.ts';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl?.startsWith('postgres')) {
  console.error('Set DATABASE_URL to a PostgreSQL database: the baseline runs on pg.');
  process.exit(2);
}
const sizes = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const JWT_SECRET = 'benchmark-secret-that-is-long-enough-0123456789';

const startServer = (script: string, env: Record<string, string>) => startProcess(script, { JWT_SECRET, DATABASE_URL: databaseUrl!, ...env });

const json = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' });

type Endpoint = 'list' | 'get' | 'post';

function load(endpoint: Endpoint, url: string, token: string, conversationIds: string[]) {
  const run = (opts: autocannon.Options) => autocannon({ connections, duration: seconds, ...opts });
  if (endpoint === 'list') return run({ url: `${url}/api/v1/conversations?limit=20`, headers: json(token) });
  if (endpoint === 'get') return run({ url: `${url}/api/v1/conversations/${conversationIds[0]}`, headers: json(token) });
  let next = 0;
  return run({
    url,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/messages',
        headers: json(token),
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ conversation_id: conversationIds[next++ % conversationIds.length], content: 'Benchmark message' }),
        }),
      },
    ],
  });
}

const database = await openDatabase({ databaseUrl, dataDir: tmpdir(), poolMax: 4 });
await migrateToLatest(database.db);
console.log(`conversations benchmark: ${cpus().length} cores, ${seconds} s per run, ${connections} connections, PostgreSQL\n`);
console.log('size       endpoint                         server               req/s     p50 ms   p99 ms   non-2xx');

for (const size of sizes) {
  // The app (validating responses) makes the tenant and the conversations the writes go to.
  const app = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'true', RATE_LIMIT_PER_MINUTE: '1000000', BCRYPT_COST: '4' });
  const email = `bench-${Date.now()}@example.test`;
  const registered = (await fetch(`${app.url}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password: 'benchmark password', name: 'Bench' }),
  }).then((r) => r.json())) as { access_token: string; user: { id: string }; tenant: { id: string } };
  const token = registered.access_token;
  const seedStart = Date.now();
  await seedConversations(database, registered.tenant.id, size);
  const seedMs = Date.now() - seedStart;
  const conversationIds: string[] = [];
  for (let i = 0; i < 50; i++) {
    const c = (await fetch(`${app.url}/api/v1/conversations`, {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ subject: `bench ${i}`, ...(await contactFor(app.url, token, i)) }),
    }).then((r) => r.json())) as { id: string };
    conversationIds.push(c.id);
  }

  // The statements the app runs for each endpoint, for the baseline to replay.
  const captured = await captureStatements(token, registered.tenant.id, conversationIds[0]!);
  const captureFile = join(tmpdir(), `bench-capture-${process.pid}.json`);
  writeFileSync(captureFile, JSON.stringify(captured));

  // All three servers run side by side (an idle one costs nothing) and each endpoint is measured on all
  // of them before the next: the sends, which add messages, come last, so every server reads the same data.
  const appOff = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'false', RATE_LIMIT_PER_MINUTE: '1000000', BCRYPT_COST: '4' });
  const baseline = await startServer('scripts/bench/baseline-server.ts', { BASELINE_CAPTURE: captureFile });
  const servers: [string, string][] = [
    ['app, validation on', app.url],
    ['app, validation off', appOff.url],
    ['baseline node:http+pg', baseline.url],
  ];
  const label = size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}k`;
  console.log(`(${label}: seeded in ${(seedMs / 1000).toFixed(1)} s)`);
  for (const endpoint of ['list', 'get', 'post'] as const) {
    const name = { list: 'GET /v1/conversations?limit=20', get: 'GET /v1/conversations/{id}', post: 'POST /v1/messages' }[endpoint];
    const results: [string, autocannon.Result][] = [];
    for (const [server, url] of servers) results.push([server, await load(endpoint, url, token, conversationIds)]);
    const base = results.find(([n]) => n.startsWith('baseline'))![1];
    for (const [server, x] of results) {
      const ratio = server.startsWith('baseline') ? '' : `  (${((x.requests.average / base.requests.average) * 100).toFixed(0)}% of baseline req/s)`;
      console.log(
        `${label.padEnd(10)} ${name.padEnd(32)} ${server.padEnd(20)} ${x.requests.average.toFixed(0).padStart(6)}   ${String(x.latency.p50).padStart(6)}   ${String(x.latency.p99).padStart(6)}   ${String(x.non2xx).padStart(6)}${ratio}`,
      );
    }
  }
  await Promise.all([app.stop(), appOff.stop(), baseline.stop()]);
}
await database.close();

async function contactFor(url: string, token: string, i: number) {
  const c = (await fetch(`${url}/api/v1/contacts`, { method: 'POST', headers: json(token), body: JSON.stringify({ name: `Bench contact ${i}` }) }).then((r) =>
    r.json(),
  )) as { id: string };
  return { contact_id: c.id };
}

// Runs each endpoint once through an in-process app whose database reports every statement.
async function captureStatements(token: string, tenantId: string, conversationId: string) {
  let sink: { sql: string; params: unknown[] }[] = [];
  const db = await openDatabase({ databaseUrl, dataDir: tmpdir(), poolMax: 2, onQuery: (sql, params) => sink.push({ sql, params: [...params] }) });
  const passwords = new PasswordHasher(4, 1);
  const app = createApp({
    config: {
      validateResponses: false,
      appUrl: 'http://bench',
      rateLimits: { perMinute: 1_000_000, login: 1_000_000, forgotPassword: 1_000_000, widgetSessions: 1_000_000, widgetConversations: 1_000_000, widgetMessages: 1_000_000, widgetUploads: 1_000_000 },
      trustProxy: false,
      requireHttps: false,
    },
    logger: pino({ level: 'silent' }),
    database: db,
    tokens: new TokenService(JWT_SECRET),
    passwords,
    mailer: { send: async () => undefined, close: async () => undefined },
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const take = async (request: () => Promise<Response>) => {
    sink = [];
    const res = await request();
    if (!res.ok) throw new Error(`capture: ${res.status} ${await res.text()}`);
    return sink;
  };
  const captured = {
    tenantId,
    conversationId,
    list: await take(() => fetch(`${url}/api/v1/conversations?limit=20`, { headers: json(token) })),
    get: await take(() => fetch(`${url}/api/v1/conversations/${conversationId}`, { headers: json(token) })),
    post: await take(() =>
      fetch(`${url}/api/v1/messages`, { method: 'POST', headers: json(token), body: JSON.stringify({ conversation_id: conversationId, content: 'capture' }) }),
    ),
  };
  server.close();
  await passwords.close();
  await db.close();
  return captured;
}
