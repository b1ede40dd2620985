// Webhook delivery benchmark: `npm run bench:webhooks` (DATABASE_URL to run the service on PostgreSQL).
//
// 1. Throughput: a backlog of N message.created deliveries (the receiver holds its first requests until the
//    backlog is in the database) is drained into a fast local receiver by one service instance; beside it, a
//    bare loop signs the same bodies with standardwebhooks and posts them to the same receiver with the
//    same concurrency. Both in this run, so the ratio is what counts.
// 2. Lag: messages are sent at half the service's measured send rate; for each, the time from its POST
//    being answered (after commit) to its delivery arriving.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startProcess } from './support.ts';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const LAG_SECONDS = Number(process.env.BENCH_LAG_SECONDS ?? 10);
const CONCURRENCY = 16;

const arrivals = new Map<string, number>();
let held: (() => void)[] | undefined = [];
const bodies: { id: string; body: string }[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const id = String(req.headers['webhook-id']);
    if (!arrivals.has(id)) arrivals.set(id, performance.now());
    if (bodies.length < BACKLOG) bodies.push({ id, body: Buffer.concat(chunks).toString() });
    const answer = () => res.writeHead(200).end();
    if (held) held.push(answer);
    else answer();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const service = await startProcess('src/server.ts', {
  DATA_DIR: dataDir,
  BCRYPT_COST: '4',
  DATABASE_URL: process.env.DATABASE_URL ?? `pglite://${join(dataDir, 'db')}`,
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_CONCURRENCY: String(CONCURRENCY),
  // The held first requests must not time out while the backlog builds: a timeout sends them to a retry and
  // leaves the dispatcher wherever its retry cycle happens to be at the release (a drain then began 0 to
  // 400 ms late at random, a third of the measured rate on a 4,000 backlog).
  WEBHOOK_TIMEOUT_MS: '60000',
  RATE_LIMIT_PER_MINUTE: '1000000',
});
const api = async (method: string, path: string, body?: unknown, token?: string) => {
  const res = await fetch(`${service.url}/api${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

const reg = await api('POST', '/v1/auth/register', { email: `bench-${Date.now()}@example.test`, password: 'correct horse battery staple', name: 'B', tenant_name: 'Bench' });
const token = reg.body.access_token as string;
const hook = (await api('POST', '/v1/webhooks', { url: receiverUrl, events: ['message.created'] }, token)).body;
const contact = (await api('POST', '/v1/contacts', { name: 'Visitor', email: `v-${Date.now()}@example.test` }, token)).body;
const conversation = (await api('POST', '/v1/conversations', { contact_id: contact.id }, token)).body;
if (!conversation.id) throw new Error(`no conversation: ${JSON.stringify(conversation)}`);

async function sendMessages(count: number, concurrency: number, onAnswered?: (messageId: string, at: number) => void) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const res = await api('POST', '/v1/messages', { conversation_id: conversation.id, content: `message ${i}` }, token);
        if (res.status !== 201) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
        onAnswered?.(res.body.id, performance.now());
      }
    }),
  );
}

// ---- 1. throughput ----------------------------------------------------------------------------------
let started = performance.now();
await sendMessages(BACKLOG, CONCURRENCY);
const sendRate = BACKLOG / ((performance.now() - started) / 1000);
for (;;) {
  const page = await api('GET', `/v1/webhooks/${hook.id}/deliveries?limit=1`, undefined, token);
  if (!page.body.pagination) throw new Error(`deliveries: ${page.status} ${JSON.stringify(page.body)}`);
  if (page.body.pagination.total >= BACKLOG) break;
  await new Promise((r) => setTimeout(r, 100));
}
arrivals.clear();
started = performance.now();
const release = held!;
held = undefined;
for (const answer of release) answer();
while (arrivals.size < BACKLOG - release.length) await new Promise((r) => setTimeout(r, 5));
const serviceSeconds = (performance.now() - started) / 1000;
const serviceRate = arrivals.size / serviceSeconds;

// The bare loop: sign and post the same bodies to the same receiver, same concurrency, keep-alive.
const signer = new Webhook(hook.secret);
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const post = (id: string, body: string) =>
  new Promise<void>((resolve, reject) => {
    const at = new Date();
    const req = request(receiverUrl, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'webhook-id': `bare-${id}`,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signer.sign(id, at, body),
        'content-length': Buffer.byteLength(body),
      },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end(body);
  });
started = performance.now();
let k = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (k < bodies.length) {
      const { id, body } = bodies[k++]!;
      await post(id, body);
    }
  }),
);
const bareRate = bodies.length / ((performance.now() - started) / 1000);
agent.destroy();

// ---- 2. lag at half the measured send rate -----------------------------------------------------------
const answeredAt = new Map<string, number>();
const lagArrivals = new Map<string, number>();
receiver.removeAllListeners('request');
receiver.on('request', (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = performance.now();
    const envelope = JSON.parse(Buffer.concat(chunks).toString());
    if (!lagArrivals.has(envelope.data.message.id)) lagArrivals.set(envelope.data.message.id, now);
    res.writeHead(200).end();
  });
});
const rate = sendRate / 2;
const total = Math.round(rate * LAG_SECONDS);
const t0 = performance.now();
const inflight: Promise<void>[] = [];
for (let i = 0; i < total; i++) {
  const due = t0 + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  inflight.push(
    api('POST', '/v1/messages', { conversation_id: conversation.id, content: `lag ${i}` }, token).then((res) => {
      if (res.status !== 201) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
      answeredAt.set(res.body.id, performance.now());
    }),
  );
}
await Promise.all(inflight);
// Deliveries of the throughput run still arriving are no lag messages: wait for each of these by id.
const undelivered = () => [...answeredAt.keys()].filter((id) => !lagArrivals.has(id)).length;
const deadline = performance.now() + 30_000;
while (undelivered() > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
const lags = [...answeredAt].map(([id, at]) => Math.max(0, (lagArrivals.get(id) ?? Number.POSITIVE_INFINITY) - at)).sort((a, b) => a - b);
const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor((p / 100) * lags.length))]!;

await service.stop();
receiver.close();

const results = {
  database: process.env.DATABASE_URL ? 'postgres' : 'pglite',
  backlog: BACKLOG,
  concurrency: CONCURRENCY,
  service_deliveries_per_s: Math.round(serviceRate),
  bare_sign_and_post_per_s: Math.round(bareRate),
  ratio: Number((serviceRate / bareRate).toFixed(2)),
  measured_send_rate_per_s: Math.round(sendRate),
  lag_send_rate_per_s: Math.round(rate),
  lag_messages: total,
  lag_delivered: total - undelivered(),
  lag_p50_ms: Math.round(pct(50)),
  lag_p99_ms: Math.round(pct(99)),
  lag_max_ms: Math.round(lags.at(-1)!),
};
console.log('\nWebhook delivery benchmark');
console.table({
  'service (one instance), deliveries/s': results.service_deliveries_per_s,
  'bare sign-and-post loop, requests/s': results.bare_sign_and_post_per_s,
  'ratio (goal >= 0.7)': results.ratio,
  'messages/s sent (measured)': results.measured_send_rate_per_s,
  'messages/s during the lag run (half)': results.lag_send_rate_per_s,
  'commit-to-delivery lag p50, ms': results.lag_p50_ms,
  'commit-to-delivery lag p99, ms (goal < 500)': results.lag_p99_ms,
  'lag max, ms': results.lag_max_ms,
  'lag run: delivered / sent': `${results.lag_delivered} / ${results.lag_messages}`,
});
const out = new URL('./webhooks.results.json', import.meta.url);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`written to ${out.pathname}`);
process.exit(0);
