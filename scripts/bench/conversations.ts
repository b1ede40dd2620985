// HTTP benchmark of GET /v1/conversations (with and without a status filter), GET /v1/conversations/{id}
// and POST /v1/messages, at 10 thousand and at a million conversations in one tenant, beside the ideal
// baseline: plain node:http + pg running, in one transaction, only the tenant's set_config and the work's
// own statements as the app sent them (for a list page: the page query, no count; see
// scripts/bench/baseline-server.ts). The app runs twice, with response validation on and off: the
// ratios are of the baseline's req/s in the same run, and validation's cost is off against on. Every
// server is a process of its own. Figures go to scripts/bench/results/conversations.json.
//
//   DATABASE_URL=postgres://user@127.0.0.1:5432/db npm run bench:conversations
//   npm run bench:conversations          # embedded PGlite: each server on its own copy of one data directory
//   BENCH_SIZES=10000,1000000 BENCH_SECONDS=10 BENCH_CONNECTIONS=10 BENCH_ENDPOINTS=list,listOpen,get,post ...
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pino from 'pino';
import { createApp } from '../../src/app.ts';
import { PasswordHasher } from '../../src/auth/password.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { BEGIN_MARK, openDatabase, settingsOf } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { seedConversations } from './seed-conversations.ts';
import { type Figures, writeResults } from './results.ts';
import { startProcess } from './support.ts';

const databaseUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined;
// Without PostgreSQL the servers run on PGlite, each in its own process as the service runs on its
// embedded default: one data directory is made and seeded, then copied for each server (PGlite opens a
// directory in one process only). The sends write to each server's own copy.
const onPGlite = databaseUrl === undefined;
const sizes = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
// Each timed run follows a warm-up of the same load: a route's first request compiles its validators (tens
// to hundreds of milliseconds, printed apart as the first request), which is no part of its throughput.
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
/** Turns each server takes, the run's seconds shared among them. */
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const JWT_SECRET = 'benchmark-secret-that-is-long-enough-0123456789';

const startServer = (script: string, env: Record<string, string>) => startProcess(script, { JWT_SECRET, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), ...env });

const json = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' });

type Endpoint = 'list' | 'listOpen' | 'get' | 'post';

const ENDPOINTS: Record<Endpoint, string> = {
  list: 'GET /v1/conversations?limit=20',
  listOpen: 'GET /v1/conversations?status=open',
  get: 'GET /v1/conversations/{id}',
  post: 'POST /v1/messages',
};
const LIST_PATH = '/api/v1/conversations?limit=20';
const LIST_OPEN_PATH = '/api/v1/conversations?status=open&limit=20';
// In this order (sends last: they add messages, and every server should read the same data).
const endpoints = (process.env.BENCH_ENDPOINTS ?? 'list,listOpen,get,post').split(',') as Endpoint[];
for (const e of endpoints) if (!(e in ENDPOINTS)) throw new Error(`BENCH_ENDPOINTS: no endpoint ${e} (list, listOpen, get, post)`);

function load(endpoint: Endpoint, url: string, token: string, conversationIds: string[], duration = seconds) {
  const run = (opts: autocannon.Options) => autocannon({ connections, duration, ...opts });
  if (endpoint === 'list') return run({ url: `${url}${LIST_PATH}`, headers: json(token) });
  if (endpoint === 'listOpen') return run({ url: `${url}${LIST_OPEN_PATH}`, headers: json(token) });
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

const database = databaseUrl ? await openDatabase({ databaseUrl, dataDir: tmpdir(), poolMax: 4 }) : undefined;
if (database) await migrateToLatest(database.db);
console.log(`conversations benchmark: ${cpus().length} cores, ${seconds} s per run, ${connections} connections, ${onPGlite ? 'PGlite' : 'PostgreSQL'}\n`);
console.log('size   endpoint                          server                 req/s   p50 ms   p99 ms  non-2xx  CPU µs/req  of ideal (named)  first ms');
const figures: Figures = {};

for (const size of sizes) {
  const appEnv = { RATE_LIMIT_PER_MINUTE: '1000000', BCRYPT_COST: '4' };
  // On PGlite: the data directory the app makes and the seed fills, copied for each server.
  const pgliteRoot = onPGlite ? mkdtempSync(join(tmpdir(), 'chat-bench-conversations-')) : undefined;
  const pgliteCopy = (name: string) => {
    const dir = join(pgliteRoot!, name);
    if (name !== 'made') cpSync(join(pgliteRoot!, 'made'), dir, { recursive: true });
    return { DATABASE_URL: `pglite://${dir}` };
  };
  // The app (validating responses) makes the tenant and the conversations the writes go to.
  let app = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'true', ...appEnv, ...(onPGlite ? pgliteCopy('made') : {}) });
  const email = `bench-${Date.now()}@example.test`;
  const registered = (await fetch(`${app.url}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password: 'benchmark password', name: 'Bench' }),
  }).then((r) => r.json())) as { access_token: string; user: { id: string }; tenant: { id: string } };
  let token = registered.access_token;
  // Access tokens last 15 minutes, and seeding a million conversations, then measuring, can take longer:
  // every endpoint is measured with a token of its own (the POSTs of a long run were once all 401s).
  const freshToken = async () =>
    (
      (await fetch(`${app.url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email, password: 'benchmark password' }),
      }).then((r) => r.json())) as { access_token: string }
    ).access_token;
  const createConversations = async () => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const c = (await fetch(`${app.url}/api/v1/conversations`, {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify({ subject: `bench ${i}`, ...(await contactFor(app.url, token, i)) }),
      }).then((r) => r.json())) as { id: string };
      ids.push(c.id);
    }
    return ids;
  };
  const seedStart = Date.now();
  let conversationIds: string[];
  let captured: Awaited<ReturnType<typeof captureStatements>>;
  if (database) {
    await seedConversations(database, registered.tenant.id, size);
    conversationIds = await createConversations();
    // The statements the app runs for each endpoint, for the baseline to replay.
    captured = await captureStatements(databaseUrl!, token, registered.tenant.id, conversationIds[0]!);
  } else {
    // PGlite: the directory is this process's while it seeds and captures, then the servers' copies'.
    conversationIds = await createConversations();
    await app.stop();
    const made = pgliteCopy('made').DATABASE_URL;
    const seeding = await openDatabase({ databaseUrl: made, dataDir: tmpdir(), poolMax: 1 });
    await seedConversations(seeding, registered.tenant.id, size);
    await seeding.close();
    captured = await captureStatements(made, token, registered.tenant.id, conversationIds[0]!);
    // A login that every copy knows (the seed can outlast an access token).
    app = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'true', ...appEnv, DATABASE_URL: made });
    token = await freshToken();
    await app.stop();
  }
  const seedMs = Date.now() - seedStart;
  const captureFile = join(tmpdir(), `bench-capture-${process.pid}.json`);
  writeFileSync(captureFile, JSON.stringify(captured));

  // All the servers run side by side (an idle one costs nothing) and each endpoint is measured on all
  // of them before the next: the sends, which add messages, come last, so every server reads the same data.
  if (onPGlite) app = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'true', ...appEnv, ...pgliteCopy('on') });
  const appOff = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'false', ...appEnv, ...(onPGlite ? pgliteCopy('off') : {}) });
  // pg and the validator as published (DEPENDENCY_PATCHES=false), validating responses as the first does:
  // what the patches of their internals buy (docs/architecture.md, "Patched dependencies").
  const appPlain = await startServer('src/server.ts', { VALIDATE_RESPONSES: 'true', DEPENDENCY_PATCHES: 'false', ...appEnv, ...(onPGlite ? pgliteCopy('plain') : {}) });
  const baseline = await startServer('scripts/bench/baseline-server.ts', {
    BASELINE_CAPTURE: captureFile,
    ...(onPGlite ? { BASELINE_PGLITE_DIR: pgliteCopy('ideal').DATABASE_URL.slice('pglite://'.length) } : {}),
  });
  // The same ideal with its statements prepared per connection, as the app's hot ones are on PostgreSQL
  // (DATABASE_NAMED_STATEMENTS): what the ratio would be if the ideal did that too. (PostgreSQL only.)
  const namedBaseline = onPGlite ? undefined : await startServer('scripts/bench/baseline-server.ts', { BASELINE_CAPTURE: captureFile, BASELINE_NAMED: 'true' });
  const servers: [string, string, () => number][] = [
    ['app, validation on', app.url, app.cpuSeconds],
    ['app, validation off', appOff.url, appOff.cpuSeconds],
    ['app, unpatched', appPlain.url, appPlain.cpuSeconds],
    ['ideal node:http+pg', baseline.url, baseline.cpuSeconds],
    ...(namedBaseline ? [['ideal, named', namedBaseline.url, namedBaseline.cpuSeconds] as [string, string, () => number]] : []),
  ];
  const label = size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}k`;
  console.log(`(${label}: seeded in ${(seedMs / 1000).toFixed(1)} s)`);
  for (const endpoint of endpoints) {
    // Each server's own CPU per answered request (the servers take turns, so the time is its own).
    const cpuPerRequest = new Map<string, number>();
    const firstRequestMs = new Map<string, number>();
    // (On PGlite a login would be known to one copy only: the one made before the copies serves throughout.)
    if (!onPGlite) token = await freshToken();
    for (const [server, url] of servers) {
      firstRequestMs.set(server, await firstRequest(endpoint, url, token, conversationIds[0]!));
      if (warmupSeconds > 0) await load(endpoint, url, token, conversationIds, warmupSeconds);
    }
    // The servers take turns in slices (a round is one slice each, the first server changing from round
    // to round): this machine's speed wanders over tens of seconds, and one server measured for the whole
    // time after another read ratios anywhere from 0.5 to 1.3 for the same code.
    const slices = new Map<string, { requests: number; seconds: number; cpu: number; p50: number[]; p99: number[]; non2xx: number }>();
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < servers.length; k++) {
        const [server, url, cpuSeconds] = servers[(round + k) % servers.length]!;
        const before = cpuSeconds();
        const result = await load(endpoint, url, token, conversationIds, seconds / rounds);
        const into = slices.get(server) ?? { requests: 0, seconds: 0, cpu: 0, p50: [], p99: [], non2xx: 0 };
        into.requests += result.requests.total;
        into.seconds += result.duration;
        into.cpu += cpuSeconds() - before;
        into.p50.push(result.latency.p50);
        into.p99.push(result.latency.p99);
        into.non2xx += result.non2xx;
        slices.set(server, into);
      }
    }
    // Throughput over all slices; the latency figures are the median slice's p50 and the worst slice's p99.
    const results: [string, { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number }][] = servers.map(([server]) => {
      const s = slices.get(server)!;
      cpuPerRequest.set(server, (s.cpu * 1e6) / Math.max(1, s.requests));
      const p50 = [...s.p50].sort((a, b) => a - b)[Math.floor(s.p50.length / 2)]!;
      return [server, { requests: { average: s.requests / s.seconds }, latency: { p50, p99: Math.max(...s.p99) }, non2xx: s.non2xx }];
    });
    const base = results.find(([n]) => n === 'ideal node:http+pg')![1];
    const namedBase = results.find(([n]) => n === 'ideal, named')?.[1];
    const on = results.find(([n]) => n.endsWith('on'))![1];
    for (const [server, x] of results) {
      const ratio = x.requests.average / base.requests.average;
      const key = `${endpoint}.${label}.${server === 'ideal, named' ? 'ideal_named' : server.startsWith('ideal') ? 'ideal' : server.endsWith('unpatched') ? 'unpatched' : server.endsWith('on') ? 'validation_on' : 'validation_off'}`;
      figures[`${key}.req_s`] = Math.round(x.requests.average);
      figures[`${key}.p50_ms`] = x.latency.p50;
      figures[`${key}.p99_ms`] = x.latency.p99;
      figures[`${key}.cpu_us_per_request`] = Math.round(cpuPerRequest.get(server)!);
      figures[`${key}.first_request_ms`] = Math.round(firstRequestMs.get(server)!);
      if (!server.startsWith('ideal')) {
        figures[`${key}.ratio_of_ideal`] = Number(ratio.toFixed(3));
        if (namedBase) figures[`${key}.ratio_of_ideal_named`] = Number((x.requests.average / namedBase.requests.average).toFixed(3));
      }
      console.log(
        `${label.padEnd(6)} ${ENDPOINTS[endpoint].padEnd(33)} ${server.padEnd(20)} ${x.requests.average.toFixed(0).padStart(7)}   ${String(x.latency.p50).padStart(6)}   ${String(x.latency.p99).padStart(6)}  ${String(x.non2xx).padStart(7)}  ${Math.round(cpuPerRequest.get(server)!).toString().padStart(9)}  ${(server.startsWith('ideal') ? '' : `${ratio.toFixed(2)}${namedBase ? ` (${(x.requests.average / namedBase.requests.average).toFixed(2)})` : ''}`).padStart(11)}  ${Math.round(firstRequestMs.get(server)!).toString().padStart(8)}`,
      );
    }
    const failed = results.filter(([, x]) => x.non2xx > 0).map(([n]) => n);
    if (failed.length > 0) console.log(`${''.padEnd(6)} ${''.padEnd(33)} NOT VALID: answers other than 2xx from ${failed.join(', ')}`);
    const off = results.find(([n]) => n.endsWith('off'))![1];
    // What response validation costs: the share of throughput lost with it on.
    const cost = 1 - on.requests.average / off.requests.average;
    figures[`${endpoint}.${label}.validation_cost`] = Number(cost.toFixed(3));
    console.log(`${''.padEnd(6)} ${''.padEnd(33)} response validation costs ${(cost * 100).toFixed(0)}% of req/s`);
    const plain = results.find(([n]) => n.endsWith('unpatched'))![1];
    // What the patches of pg's and the validator's internals buy: throughput with them over without.
    const gain = on.requests.average / plain.requests.average - 1;
    figures[`${endpoint}.${label}.patches_gain`] = Number(gain.toFixed(3));
    console.log(`${''.padEnd(6)} ${''.padEnd(33)} the dependency patches add ${(gain * 100).toFixed(0)}% of req/s`);
  }
  await Promise.all([app.stop(), appOff.stop(), appPlain.stop(), baseline.stop(), namedBaseline?.stop()]);
  if (pgliteRoot) rmSync(pgliteRoot, { recursive: true, force: true });
}
await database?.close();
// PostgreSQL's figures and PGlite's each keep a file of their own.
writeResults(onPGlite ? 'conversations-pglite' : 'conversations', figures, { seconds, rounds, connections, sizes });

/**
 * The time of one request, alone: the first of its route in the server's life, it compiles what the route
 * needs. (The status filter is the list's route: its figure is a second request.)
 */
async function firstRequest(endpoint: Endpoint, url: string, token: string, conversationId: string): Promise<number> {
  const started = performance.now();
  const res =
    endpoint === 'post'
      ? await fetch(`${url}/api/v1/messages`, { method: 'POST', headers: json(token), body: JSON.stringify({ conversation_id: conversationId, content: 'First message' }) })
      : await fetch(`${url}${endpoint === 'list' ? LIST_PATH : endpoint === 'listOpen' ? LIST_OPEN_PATH : `/api/v1/conversations/${conversationId}`}`, { headers: json(token) });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${ENDPOINTS[endpoint]}: ${res.status}`);
  return performance.now() - started;
}

async function contactFor(url: string, token: string, i: number) {
  const c = (await fetch(`${url}/api/v1/contacts`, { method: 'POST', headers: json(token), body: JSON.stringify({ name: `Bench contact ${i}` }) }).then((r) =>
    r.json(),
  )) as { id: string };
  return { contact_id: c.id };
}

// Runs each endpoint once through an in-process app whose database reports every statement.
async function captureStatements(databaseUrl: string, token: string, tenantId: string, conversationId: string) {
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
  // Each request twice, keeping the second: the login check is then answered from the session cache, as
  // it is under load. Of what is left, the work's transaction (the last one) is what the ideal replays.
  const take = async (request: () => Promise<Response>) => {
    for (let i = 0; i < 2; i++) {
      sink = [];
      const res = await request();
      if (!res.ok) throw new Error(`capture: ${res.status} ${await res.text()}`);
    }
    // The ideal begins with the tenant's settings as one simple query, one round trip, as the app did
    // before its BEGIN travelled with the first statement (ServiceClient): the app's marker is replayed so.
    sink = sink.map((s) => (s.sql === BEGIN_MARK ? beginWithSettings(...(s.params as [string, string, boolean])) : s));
    const start = sink.findLastIndex((s) => /^(begin; )?select set_config\(/.test(s.sql));
    // The baseline commits itself: a captured commit replayed would be a round trip more.
    return sink.slice(start).filter((s) => !/^\s*(commit|rollback)\s*$/i.test(s.sql));
  };
  // A list page's ideal is the tenant and the page query alone: no total. The app reads its exact total in
  // the page's statement (a column from the counter rows): the ideal's copy leaves that column out.
  const pageOnly = (statements: { sql: string; params: unknown[] }[]) =>
    statements.filter((s, i) => i === 0 || (s.sql.includes('from "conversations"') && / limit \$\d+/.test(s.sql) && !s.sql.includes('count('))).map(withoutTotal);
  const captured = {
    tenantId,
    conversationId,
    list: pageOnly(await take(() => fetch(`${url}${LIST_PATH}`, { headers: json(token) }))),
    listOpen: pageOnly(await take(() => fetch(`${url}${LIST_OPEN_PATH}`, { headers: json(token) }))),
    get: await take(() => fetch(`${url}/api/v1/conversations/${conversationId}`, { headers: json(token) })),
    post: await take(() =>
      fetch(`${url}/api/v1/messages`, { method: 'POST', headers: json(token), body: JSON.stringify({ conversation_id: conversationId, content: 'capture' }) }),
    ),
  };
  for (const endpoint of ['list', 'listOpen'] as const) {
    if (captured[endpoint].length !== 2) throw new Error(`capture: expected set_config and the page query for ${endpoint}, got ${captured[endpoint].length} statements`);
  }
  server.close();
  await passwords.close();
  await db.close();
  return captured;
}

/**
 * The BEGIN and settings of a transaction as one simple query, the app's own settings statement with its
 * values as literals (the ideal's first round trip).
 */
function beginWithSettings(role: string, tenantId: string, eventWriter: boolean): { sql: string; params: unknown[] } {
  if (!/^[a-z_]+$/.test(role) || !/^(tn_[0-9a-f-]+)?$/.test(tenantId)) throw new Error(`capture: unexpected settings ${role} ${tenantId}`);
  const { text, values } = settingsOf(role, tenantId, eventWriter);
  return { sql: `begin; ${text.replace(/\$(\d+)/g, (_, n: string) => `'${values[Number(n) - 1]}'`)}`, params: [] };
}

/** The statement without its `total_count` column (a subquery) and that subquery's parameters, renumbered. */
function withoutTotal(statement: { sql: string; params: unknown[] }): { sql: string; params: unknown[] } {
  const start = statement.sql.indexOf(', (select coalesce(sum("n"), 0) as "total" from "conversation_counts"');
  if (start === -1) return statement;
  let depth = 0;
  let end = start + 2;
  for (; end < statement.sql.length; end++) {
    if (statement.sql[end] === '(') depth++;
    else if (statement.sql[end] === ')' && --depth === 0) break;
  }
  const alias = ' as "total_count"';
  if (statement.sql.slice(end + 1, end + 1 + alias.length) !== alias) throw new Error('capture: the total_count column is not where it was expected');
  const removed = new Set([...statement.sql.slice(start, end + 1).matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  const kept = statement.params.filter((_, i) => !removed.has(i + 1));
  const renumber = (n: number) => n - [...removed].filter((r) => r < n).length;
  const sql = (statement.sql.slice(0, start) + statement.sql.slice(end + 1 + alias.length)).replace(/\$(\d+)/g, (_, n: string) => `$${renumber(Number(n))}`);
  return { sql, params: kept };
}
