// Fan-out benchmark: N sockets of one tenant (1,000 and 10,000), one event published at a time (a message
// sent over REST), and the time until the last socket has it, over several events (p50, p99); plus the
// server's memory per idle connection (RSS growth over N). Beside it, in the same run, a bare `ws` server
// (scripts/bench/bare-ws-server.ts) broadcasts the same frame to the same number of sockets, timed the
// same way from the request that causes it; the ratio is the service's time over the bare one's. Each
// server is a process of its own. Figures go to scripts/bench/results/fanout.json.
//
//   npm run bench:fanout                                  # embedded PGlite
//   DATABASE_URL=postgres://... npm run bench:fanout
//   BENCH_SOCKETS=1000,10000 BENCH_EVENTS=20 ...
import { cpus } from 'node:os';
import { WebSocket } from 'ws';
import { type Figures, writeResults } from './results.ts';
import { jsonPost, startProcess } from './support.ts';

const sizes = (process.env.BENCH_SOCKETS ?? '1000,10000').split(',').map(Number);
// 100 events: with 20, the p99 was the single slowest event.
const eventsPerSize = Number(process.env.BENCH_EVENTS ?? 100);
// Events sent before the timed ones, to each server alike, as bench:webhooks warms both sides up: the first
// hundred sends of a process just started ran its send path still being compiled (sent one at a time with no
// sockets, the second half of 400 sends answered at 6.1 ms p50, the second half of 3,000 at 4.8 ms).
const warmUpEvents = Number(process.env.BENCH_WARMUP_EVENTS ?? 200);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

console.log(`fan-out benchmark: ${cpus().length} cores, ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${eventsPerSize} events per size\n`);
console.log('sockets   server    connect s   last socket p50 ms   p99 ms   max ms   RSS per idle connection   p50, p99 of bare   CPU per event');
const figures: Figures = {};
for (const n of sizes) {
  // A fresh server per size, so its memory before the sockets is a clean baseline.
  const { url: base, rssKiB, stop, cpuSeconds } = await startProcess('src/server.ts', {
    DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
    DATA_DIR: '/tmp/chat-bench-fanout',
    BCRYPT_COST: '4',
    RATE_LIMIT_PER_MINUTE: '1000000',
  });
  const post = jsonPost(base);
  try {
    const owner = await post('/api/v1/auth/register', undefined, { email: `fanout-${n}-${Date.now()}@example.test`, password: 'benchmark password', name: 'Fan' });
    const token = owner.body.access_token as string;
    const conversation = (await post('/api/v1/conversations', token, { ...(await post('/api/v1/contacts', token, { name: 'c' }).then((r) => ({ contact_id: r.body.id }))) })).body;
    const rssBefore = rssKiB();
    let lastFrame = '';
    let cpuBefore = 0;
    const service = await measure(n, `${base.replace('http', 'ws')}/api/v1/ws`, { Authorization: `Bearer ${token}` }, async (content) => {
      const sent = await post('/api/v1/messages', token, { conversation_id: conversation.id, content });
      if (sent.status !== 201) throw new Error(`send failed: ${sent.status}`);
    }, (frame) => (lastFrame = frame), async () => {
      const perConnection = ((rssKiB() - rssBefore) * 1024) / n;
      figures[`${n}.service.rss_per_connection_kib`] = Number((perConnection / 1024).toFixed(1));
    }, () => {
      cpuBefore = cpuSeconds();
    });
    // The service's own CPU per event, the send included: steadier than the times on a machine whose speed
    // wanders, and what a change to the delivery itself moves (the times include the client's reading).
    const cpuPerEvent = ((cpuSeconds() - cpuBefore) * 1000) / eventsPerSize;
    // The bare server sends the service's own last frame, its content made unique per event as the service's are.
    const bare = await startProcess('scripts/bench/bare-ws-server.ts', {});
    const marker = /"content":"(fan-out [^"]+)"/.exec(lastFrame)![1]!;
    const bareRun = await measure(n, bare.url.replace('http', 'ws'), {}, async (content) => {
      const res = await fetch(`${bare.url}/broadcast`, { method: 'POST', body: lastFrame.replace(marker, content) });
      if (res.status !== 202) throw new Error(`broadcast failed: ${res.status}`);
    });
    await bare.stop();
    const [p50, p99] = [percentile(service.completions, 50), percentile(service.completions, 99)];
    const [b50, b99] = [percentile(bareRun.completions, 50), percentile(bareRun.completions, 99)];
    Object.assign(figures, {
      [`${n}.service.connect_s`]: service.connectSeconds,
      [`${n}.service.p50_ms`]: Number(p50.toFixed(1)),
      [`${n}.service.p99_ms`]: Number(p99.toFixed(1)),
      [`${n}.service.cpu_ms_per_event`]: Number(cpuPerEvent.toFixed(2)),
      // How much of it is the request itself, answered (the bare server answers before it broadcasts).
      [`${n}.service.answered_p50_ms`]: Number(percentile(service.answered, 50).toFixed(1)),
      [`${n}.bare_ws.answered_p50_ms`]: Number(percentile(bareRun.answered, 50).toFixed(1)),
      [`${n}.service.after_answer_p50_ms`]: Number(percentile(service.afterAnswer, 50).toFixed(1)),
      [`${n}.bare_ws.p50_ms`]: Number(b50.toFixed(1)),
      [`${n}.bare_ws.p99_ms`]: Number(b99.toFixed(1)),
      [`${n}.ratio_p50`]: Number((p50 / b50).toFixed(2)),
      [`${n}.ratio_p99`]: Number((p99 / b99).toFixed(2)),
    });
    console.log(
      `${String(n).padEnd(9)} service   ${service.connectSeconds.toFixed(1).padStart(9)}   ${p50.toFixed(1).padStart(18)}   ${p99.toFixed(1).padStart(6)}   ${Math.max(...service.completions).toFixed(1).padStart(6)}   ${String(figures[`${n}.service.rss_per_connection_kib`]).padStart(15)} KiB   ${(p50 / b50).toFixed(2)}x, ${(p99 / b99).toFixed(2)}x   ${cpuPerEvent.toFixed(2)} ms CPU per event`,
    );
    console.log(
      `${''.padEnd(9)} service   answered at p50 ${percentile(service.answered, 50).toFixed(1)} ms, the last socket ${percentile(service.afterAnswer, 50).toFixed(1)} ms later (p50)`,
    );
    console.log(
      `${String(n).padEnd(9)} bare ws   ${bareRun.connectSeconds.toFixed(1).padStart(9)}   ${b50.toFixed(1).padStart(18)}   ${b99.toFixed(1).padStart(6)}   ${Math.max(...bareRun.completions).toFixed(1).padStart(6)}`,
    );
  } finally {
    await stop();
  }
}
writeResults('fanout', figures, { events: eventsPerSize });

/**
 * Opens n sockets, then times eventsPerSize events, one at a time: from the request that causes one to
 * the moment the last socket has its frame, after warmUpEvents untimed. `idle` runs once the sockets are open
 * and quiet, `timing` just before the first timed event.
 */
async function measure(
  n: number,
  wsUrl: string,
  headers: Record<string, string>,
  send: (content: string) => Promise<void>,
  onEventFrame: (frame: string) => void = () => undefined,
  idle: () => Promise<void> = async () => undefined,
  timing: () => void = () => undefined,
) {
  const sockets: WebSocket[] = [];
  const started = Date.now();
  let onFrame: (content: string) => void = () => undefined;
  try {
    for (let i = 0; i < n; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, n - i) }, () =>
          new Promise<void>((resolve, reject) => {
            const ws = new WebSocket(wsUrl, { headers });
            ws.on('message', (raw) => {
              const text = raw.toString();
              if (text.startsWith('{"type":"welcome"')) return resolve();
              // A cheap test before parsing: only message.created frames matter here.
              if (!text.includes('"message.created"')) return;
              onEventFrame(text);
              onFrame((JSON.parse(text) as { data: { message: { content: string } } }).data.message.content);
            });
            ws.once('error', reject);
            sockets.push(ws);
          }),
        ),
      );
    }
    const connectSeconds = Number(((Date.now() - started) / 1000).toFixed(1));
    await new Promise((r) => setTimeout(r, 1000));
    await idle();
    const completions: number[] = [];
    const answered: number[] = [];
    // From the request's answer to the last socket: the send's own time (its transaction, its durable commit) left out.
    const afterAnswer: number[] = [];
    for (let e = -warmUpEvents; e < eventsPerSize; e++) {
      if (e === 0) timing();
      const content = `fan-out ${n} #${e}`;
      let received = 0;
      const t0 = performance.now();
      const done = new Promise<number>((resolve) => {
        onFrame = (c) => {
          if (c === content && ++received === n) resolve(performance.now() - t0);
        };
      });
      await send(content);
      const answeredAt = performance.now() - t0;
      const completion = await done;
      if (e < 0) continue;
      answered.push(answeredAt);
      completions.push(completion);
      afterAnswer.push(Math.max(0, completion - answeredAt));
    }
    return { connectSeconds, completions, answered, afterAnswer };
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}
