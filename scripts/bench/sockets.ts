// Idle sockets benchmark: N sockets on one instance (BENCH_SOCKETS, default 50,000), half agents and half
// visitors of one tenant, and beside them, in the same run, a bare `ws` server (scripts/bench/bare-ws-server.ts)
// holding as many. It reports each server's memory per socket ((RSS, and heap plus external, after a
// garbage collection with all N open, less the same before any) / N) and one event's fan-out to all N:
// from the request that causes it until the last socket has its frame, p50 and p99, the two servers taking
// turns event by event after a warm-up, as bench:fanout times them.
//
// The event is a message an agent writes in a visitor's conversation (POST /api/v1/messages): its
// message.created frame goes to every agent socket (the members see every event of their tenant) and to
// every socket of that visitor. The agent sockets are one login's (tabs, devices); the visitor sockets are
// one visitor's, each with a widget session of its own, started as a returning visitor with the earlier
// token. One visitor, because the service sends visitors only their own conversations' events: no event
// reaches many visitors, and only sockets that all receive it measure the fan-out to all N. The bare
// server sends the service's member frame, its content made unique per event.
//
// The sockets are opened by client processes (scripts/bench/socket-clients.ts, at most 5,000 each, each from
// a loopback address of its own: 127.0.0.2, 127.0.0.3, ...), so the measured processes hold only their side.
// A process holds one file per socket: the npm script raises the soft limit of open files to the hard one
// (node cannot), and N is lowered to what the limit leaves, said at the start, when the hard limit is short.
//
//   npm run bench:sockets                              # embedded PGlite
//   DATABASE_URL=postgres://... REDIS_URL=redis://... npm run bench:sockets
//   BENCH_SOCKETS=2000 BENCH_EVENTS=100 BENCH_WARMUP_EVENTS=20 ...
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import type { ClientReport, ClientShare } from './socket-clients.ts';
import { type Figures, writeResults } from './results.ts';
import { jsonPost, MEMORY_PROBE_ARGS, memoryAfterGc, newTimings, openFileLimits, percentile, startProcess, timeEvent } from './support.ts';

const requested = Number(process.env.BENCH_SOCKETS ?? 50_000);
const eventCount = Number(process.env.BENCH_EVENTS ?? 100);
const warmUpEvents = Number(process.env.BENCH_WARMUP_EVENTS ?? 20);
const PER_CLIENT = 5000;
// Files a server holds besides its sockets: database and Redis connections, its listener, modules, logs.
const SERVER_FILES = 500;
const SITE = 'https://bench.example';

const limits = openFileLimits();
const fits = Math.floor((limits.soft - SERVER_FILES) / 1000) * 1000;
const n = Math.min(requested, fits);
console.log(`sockets benchmark: ${cpus().length} cores, ${process.env.DATABASE_URL ? `PostgreSQL${process.env.REDIS_URL ? ' + Redis' : ''}` : 'PGlite'}, open-file limit ${limits.soft} (hard ${limits.hard})`);
if (n < requested) {
  console.log(`the open-file limit is too low for ${requested} sockets in one process (each server holds one file per socket): measuring ${n}; raise the hard limit (ulimit -Hn, as root, or the container's nofile) for more`);
}
const agents = Math.ceil(n / 2);
const visitors = n - agents;
console.log(`${n} sockets per server (${agents} agents, ${visitors} visitors), ${eventCount} events after ${warmUpEvents} to warm up\n`);

const memoryFile = (name: string) => `/tmp/chat-bench-sockets-${process.pid}-${name}.json`;
const service = await startProcess(
  'src/server.ts',
  {
    DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
    DATA_DIR: '/tmp/chat-bench-sockets',
    BCRYPT_COST: '4',
    RATE_LIMIT_PER_MINUTE: '1000000',
    WIDGET_SESSION_RATE_LIMIT: '1000000',
    BENCH_MEMORY_FILE: memoryFile('service'),
  },
  MEMORY_PROBE_ARGS,
);
const bare = await startProcess('scripts/bench/bare-ws-server.ts', { BENCH_MEMORY_FILE: memoryFile('bare') }, MEMORY_PROBE_ARGS);
const clients: Clients[] = [];
let nextAddress = 2;
/** Set once the run is over: sockets and client processes closing then are no failure. */
let finishing = false;
try {
  const post = jsonPost(service.url);
  const stamp = Date.now();
  const owner = await post('/api/v1/auth/register', undefined, { email: `sockets-${stamp}@example.test`, password: 'benchmark password', name: 'Agent', tenant_name: `Sockets ${stamp}` });
  const token = owner.body.access_token as string;
  const widget = await post('/api/v1/widgets', token, { name: 'Shop' });
  await post('/api/v1/domains', token, { widget_id: widget.body.id, domain: 'bench.example' });
  const widgetPost = async (path: string, visitorToken: string | undefined, body: unknown) => {
    const r = await fetch(`${service.url}/api/v1/widget/${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: SITE, ...(visitorToken ? { Authorization: `Bearer ${visitorToken}` } : {}) },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`widget ${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as { id: string; visitor_token: string };
  };
  const first = await widgetPost('sessions', undefined, { widget_id: widget.body.id, page_url: `${SITE}/` });
  const conversationId = (await widgetPost('conversations', first.visitor_token, { content: 'Hello, a question' })).id;
  // Each visitor socket a session of its own (a tab opening the bubble), 50 at a time.
  const visitorTokens: string[] = [];
  const sessionsStarted = performance.now();
  for (let i = 0; i < visitors; i += 50) {
    const batch = Array.from({ length: Math.min(50, visitors - i) }, () => widgetPost('sessions', first.visitor_token, { widget_id: widget.body.id, page_url: `${SITE}/` }));
    for (const s of await Promise.all(batch)) visitorTokens.push(s.visitor_token);
  }
  console.log(`${visitors} visitor sessions started in ${((performance.now() - sessionsStarted) / 1000).toFixed(1)} s`);

  // Memory before any socket, after the setup (the paths a socket's upgrade takes already loaded).
  const serviceBefore = await memoryAfterGc(service.pid, memoryFile('service'));
  const wsBase = `${service.url.replace('http', 'ws')}/api/v1/ws`;
  const serviceClients = await openClients(service.url, [
    ...split(agents).map((count) => ({ url: wsBase, count, headers: { Authorization: `Bearer ${token}` } })),
    ...split(visitors).map((count, i) => ({ url: wsBase, count, headers: { Origin: SITE }, tokens: visitorTokens.slice(i * PER_CLIENT, i * PER_CLIENT + count) })),
  ]);
  const serviceAfter = await memoryAfterGc(service.pid, memoryFile('service'));

  const bareBefore = await memoryAfterGc(bare.pid, memoryFile('bare'));
  const bareClients = await openClients(bare.url, split(n).map((count) => ({ url: bare.url.replace('http', 'ws'), count, headers: {} })));
  const bareAfter = await memoryAfterGc(bare.pid, memoryFile('bare'));

  const perSocket = (before: { rssKiB: number; heapKiB: number }, after: { rssKiB: number; heapKiB: number }) => ({
    rss: (after.rssKiB - before.rssKiB) / n,
    heap: (after.heapKiB - before.heapKiB) / n,
  });
  const serviceMemory = perSocket(serviceBefore, serviceAfter);
  const bareMemory = perSocket(bareBefore, bareAfter);

  const sendToService = async (content: string) => {
    const sent = await post('/api/v1/messages', token, { conversation_id: conversationId, content });
    if (sent.status !== 201) throw new Error(`send failed: ${sent.status}`);
  };
  const sendToBare = async (content: string) => {
    const frame = serviceClients.lastFrame;
    const marker = /"content":"(sockets [^"]+)"/.exec(frame)![1]!;
    const res = await fetch(`${bare.url}/broadcast`, { method: 'POST', body: frame.replace(marker, content) });
    if (res.status !== 202) throw new Error(`broadcast failed: ${res.status}`);
  };
  const serviceRun = newTimings();
  const bareRun = newTimings();
  let cpuBefore = { service: 0, bare: 0 };
  for (let e = -warmUpEvents; e < eventCount; e++) {
    if (e === 0) cpuBefore = { service: service.cpuSeconds(), bare: bare.cpuSeconds() };
    await timeEvent(serviceClients, `sockets ${n} #${e}`, sendToService, e >= 0 ? serviceRun : undefined);
    await timeEvent(bareClients, `sockets ${n} bare #${e}`, sendToBare, e >= 0 ? bareRun : undefined);
  }
  const cpuPerEvent = { service: ((service.cpuSeconds() - cpuBefore.service) * 1000) / eventCount, bare: ((bare.cpuSeconds() - cpuBefore.bare) * 1000) / eventCount };

  const [p50, p99] = [percentile(serviceRun.completions, 50), percentile(serviceRun.completions, 99)];
  const [b50, b99] = [percentile(bareRun.completions, 50), percentile(bareRun.completions, 99)];
  const pairRatios = serviceRun.completions.map((c, i) => c / bareRun.completions[i]!);
  const round = (v: number, digits = 2) => Number(v.toFixed(digits));
  const figures: Figures = {
    sockets: n,
    'service.connect_s': round(serviceClients.connectSeconds, 1),
    'bare_ws.connect_s': round(bareClients.connectSeconds, 1),
    'service.rss_per_socket_kib': round(serviceMemory.rss),
    'bare_ws.rss_per_socket_kib': round(bareMemory.rss),
    'service.heap_per_socket_kib': round(serviceMemory.heap),
    'bare_ws.heap_per_socket_kib': round(bareMemory.heap),
    'memory.rss_ratio': round(serviceMemory.rss / bareMemory.rss),
    'memory.heap_ratio': round(serviceMemory.heap / bareMemory.heap),
    'service.p50_ms': round(p50, 1),
    'service.p99_ms': round(p99, 1),
    'bare_ws.p50_ms': round(b50, 1),
    'bare_ws.p99_ms': round(b99, 1),
    'fanout.ratio_p50': round(p50 / b50),
    'fanout.ratio_p99': round(p99 / b99),
    'fanout.pair_ratio_p50': round(percentile(pairRatios, 50)),
    'service.answered_p50_ms': round(percentile(serviceRun.answered, 50), 1),
    'service.cpu_ms_per_event': round(cpuPerEvent.service),
    'bare_ws.cpu_ms_per_event': round(cpuPerEvent.bare),
  };
  console.log('server    connect s   RSS per socket   heap+external per socket   event to all p50 ms   p99 ms   CPU per event');
  for (const [name, key, connect] of [['service', 'service', serviceClients], ['bare ws', 'bare_ws', bareClients]] as const) {
    console.log(
      `${name.padEnd(9)} ${connect.connectSeconds.toFixed(1).padStart(9)}   ${`${figures[`${key}.rss_per_socket_kib`]} KiB`.padStart(14)}   ${`${figures[`${key}.heap_per_socket_kib`]} KiB`.padStart(24)}   ${String(figures[`${key}.p50_ms`]).padStart(19)}   ${String(figures[`${key}.p99_ms`]).padStart(6)}   ${figures[`${key}.cpu_ms_per_event`]} ms`,
    );
  }
  console.log(
    `\nservice to bare: memory per socket ${figures['memory.rss_ratio']}x (RSS), ${figures['memory.heap_ratio']}x (heap); one event to all ${n}: ${figures['fanout.ratio_p50']}x (p50), ${figures['fanout.ratio_p99']}x (p99), event by event ${figures['fanout.pair_ratio_p50']}x (p50)`,
  );
  writeResults('sockets', figures, { sockets_requested: requested, open_file_limit: limits.soft, events: eventCount, redis: Boolean(process.env.REDIS_URL) });
} finally {
  finishing = true;
  for (const c of clients) c.close();
  await bare.stop();
  await service.stop();
}

/** Counts of at most PER_CLIENT that add up to `total`. */
function split(total: number): number[] {
  return Array.from({ length: Math.ceil(total / PER_CLIENT) }, (_, i) => Math.min(PER_CLIENT, total - i * PER_CLIENT));
}

interface Clients {
  n: number;
  onContent: (content: string, sockets?: number) => void;
  /** The last event frame a client reported (a member's, for the bare server to send). */
  lastFrame: string;
  connectSeconds: number;
  close(): void;
}

/** Starts client processes, each opening its sockets, and resolves when all are welcomed. */
async function openClients(label: string, shares: Omit<ClientShare, 'localAddress'>[]): Promise<Clients> {
  const started = performance.now();
  const children = shares.map((share) => {
    const child = fork(new URL('./socket-clients.ts', import.meta.url).pathname, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.send({ open: { ...share, localAddress: `127.0.0.${nextAddress++}` } });
    return child;
  });
  const opened: Clients = {
    n: shares.reduce((sum, s) => sum + s.count, 0),
    onContent: () => undefined,
    lastFrame: '',
    connectSeconds: 0,
    close: () => children.forEach((c) => c.connected && c.send({ close: true })),
  };
  clients.push(opened);
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve, reject) => {
          let open = false;
          child.on('message', (message: ClientReport) => {
            if ('failed' in message) {
              if (finishing) return;
              // Once open, an event would wait for the socket forever: the run ends here.
              if (open) throw new Error(`${label}: ${message.failed}`);
              return reject(new Error(`${label}: ${message.failed}`));
            }
            if ('opened' in message) {
              open = true;
              return resolve();
            }
            opened.lastFrame = message.frame;
            opened.onContent(message.content, message.sockets);
          });
          child.once('exit', (code) => {
            if (finishing) return;
            if (open) throw new Error(`${label}: a client process ended (${code})`);
            reject(new Error(`${label}: a client process ended (${code})`));
          });
        }),
    ),
  );
  opened.connectSeconds = (performance.now() - started) / 1000;
  console.log(`${label}: ${opened.n} sockets open in ${opened.connectSeconds.toFixed(1)} s`);
  return opened;
}
