// The service alone, one endpoint at a time: req/s and its own CPU per request (from /proc), nothing beside
// it. For attributing cost: run it with a piece switched off (any environment variable the service reads,
// given as JSON in PROBE_ENV), interleaved with runs of the code before a change; BENCH_CPU_PROF=dir writes
// the service's V8 profile. The machine's speed wanders, so compare runs made back to back.
//
//   DATABASE_URL=postgres://... npm run bench:probe
//   PROBE_SEED=10000 PROBE_ENDPOINTS=get,list,status,post PROBE_SECONDS=4 PROBE_ENV='{"LOG_LEVEL":"info"}' npm run bench:probe
import autocannon from 'autocannon';
import { tmpdir } from 'node:os';
import { openDatabase } from '../../src/db/database.ts';
import { seedConversations } from './seed-conversations.ts';
import { startProcess } from './support.ts';

const service = await startProcess('src/server.ts', {
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
  DATA_DIR: '/tmp/chat-bench-probe',
  VALIDATE_RESPONSES: 'true',
  RATE_LIMIT_PER_MINUTE: '1000000',
  BCRYPT_COST: '4',
  ...(JSON.parse(process.env.PROBE_ENV ?? '{}') as Record<string, string>),
});
const headers = (token?: string) => ({ 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) });
const post = async (path: string, body: unknown, token?: string) =>
  (await fetch(`${service.url}/api/v1${path}`, { method: 'POST', headers: headers(token), body: JSON.stringify(body) }).then((r) => r.json())) as Record<string, any>;

const registered = await post('/auth/register', { email: `probe-${Date.now()}@example.test`, password: 'benchmark password', name: 'Probe' });
const token = registered.access_token as string;
// PROBE_SEED=n (PostgreSQL): n more conversations as bench:conversations seeds them, a third of them closed.
if (Number(process.env.PROBE_SEED ?? 0) > 0) {
  if (!process.env.DATABASE_URL) throw new Error('PROBE_SEED needs DATABASE_URL');
  const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: tmpdir(), poolMax: 2 });
  await seedConversations(database, registered.tenant.id as string, Number(process.env.PROBE_SEED));
  await database.close();
}
const contact = await post('/contacts', { name: 'Probe contact' }, token);
// Sends go round 30 conversations: one would make them wait for each other's lock.
const conversations: string[] = [];
for (let i = 0; i < 30; i++) conversations.push((await post('/conversations', { contact_id: contact.id, subject: `probe ${i}` }, token)).id as string);
let next = 0;
const endpoints: Record<string, autocannon.Options> = {
  get: { url: `${service.url}/api/v1/conversations/${conversations[0]}`, headers: headers(token) },
  list: { url: `${service.url}/api/v1/conversations?limit=20`, headers: headers(token) },
  status: { url: `${service.url}/api/v1/conversations?status=open&limit=20`, headers: headers(token) },
  post: {
    url: service.url,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/messages',
        headers: headers(token),
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ conversation_id: conversations[next++ % conversations.length], content: 'probe' }) }),
      },
    ],
  },
};
try {
  for (const name of (process.env.PROBE_ENDPOINTS ?? 'get,list,post').split(',')) {
    const options = endpoints[name];
    if (!options) throw new Error(`no endpoint ${name}: get, list, status or post`);
    await autocannon({ ...options, connections: 10, duration: 1 });
    const before = service.cpuSeconds();
    const result = await autocannon({ ...options, connections: 10, duration: Number(process.env.PROBE_SECONDS ?? 4) });
    const cpu = service.cpuSeconds() - before;
    console.log(`${name.padEnd(5)} ${Math.round(result.requests.average).toString().padStart(6)} req/s  ${Math.round((cpu * 1e6) / result.requests.total).toString().padStart(6)} µs of CPU per request  non-2xx ${result.non2xx}`);
  }
} finally {
  await service.stop();
}
