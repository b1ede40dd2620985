// Fan-out benchmark: N sockets of one tenant (1,000 and 10,000), one event published at a time (a message
// sent over REST), and the time until the last socket has it, over several events (p50, p99); plus the
// server's memory per idle connection (RSS growth over N). Beside it, in the same run, a bare `ws` server
// (scripts/bench/bare-ws-server.ts) broadcasts the same frame to as many sockets of its own, timed the
// same way from the request that causes it, the two taking turns event by event; the ratio is the
// service's time over the bare one's. Each server is a process of its own. Figures go to
// scripts/bench/results/fanout.json.
//
//   npm run bench:fanout                                  # embedded PGlite
//   DATABASE_URL=postgres://... npm run bench:fanout
//   BENCH_SOCKETS=1000,10000 BENCH_EVENTS=20 ...
import { cpus } from 'node:os';
import { WebSocket } from 'ws';
import { type Figures, writeResults } from './results.ts';
import { type EventListeners, jsonPost, newTimings, openFileLimits, percentile, startProcess, timeEvent } from './support.ts';

const sizes = (process.env.BENCH_SOCKETS ?? '1000,10000').split(',').map(Number);
// 100 events: with 20, the p99 was the single slowest event.
const eventsPerSize = Number(process.env.BENCH_EVENTS ?? 100);
// Events sent before the timed ones, to each server alike, as bench:webhooks warms both sides up: the first
// hundred sends of a process just started ran its send path still being compiled (sent one at a time with no
// sockets, the second half of 400 sends answered at 6.1 ms p50, the second half of 3,000 at 4.8 ms).
const warmUpEvents = Number(process.env.BENCH_WARMUP_EVENTS ?? 200);

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
  const bare = await startProcess('scripts/bench/bare-ws-server.ts', {});
  const post = jsonPost(base);
  let service: Sockets | undefined;
  let bareSockets: Sockets | undefined;
  try {
    const owner = await post('/api/v1/auth/register', undefined, { email: `fanout-${n}-${Date.now()}@example.test`, password: 'benchmark password', name: 'Fan' });
    const token = owner.body.access_token as string;
    const conversation = (await post('/api/v1/conversations', token, { ...(await post('/api/v1/contacts', token, { name: 'c' }).then((r) => ({ contact_id: r.body.id }))) })).body;
    const rssBefore = rssKiB();
    let lastFrame = '';
    service = await openSockets(n, `${base.replace('http', 'ws')}/api/v1/ws`, { Authorization: `Bearer ${token}` }, (frame) => (lastFrame = frame));
    await new Promise((r) => setTimeout(r, 1000));
    figures[`${n}.service.rss_per_connection_kib`] = Number(((rssKiB() - rssBefore) / n).toFixed(1));
    const sendToService = async (content: string) => {
      const sent = await post('/api/v1/messages', token, { conversation_id: conversation.id, content });
      if (sent.status !== 201) throw new Error(`send failed: ${sent.status}`);
    };
    // The bare server sends the service's own last frame, its content made unique per event as the service's are.
    const sendToBare = async (content: string) => {
      const marker = /"content":"(fan-out [^"]+)"/.exec(lastFrame)![1]!;
      const res = await fetch(`${bare.url}/broadcast`, { method: 'POST', body: lastFrame.replace(marker, content) });
      if (res.status !== 202) throw new Error(`broadcast failed: ${res.status}`);
    };
    // The two servers take turns, event by event (the service first: the bare one sends its frame), so that
    // the machine's speed, which wanders within a run, weighs on both alike. Unless both sets of sockets
    // would pass this process's limit of open files: then the service's events come first, then the bare's.
    const inTurns = 2 * n + 1000 <= openFileLimits().soft;
    const serviceRun = newTimings();
    const bareRun = newTimings();
    let cpuBefore = { service: 0, bare: 0 };
    if (inTurns) bareSockets = await openSockets(n, bare.url.replace('http', 'ws'), {});
    for (let e = -warmUpEvents; e < eventsPerSize; e++) {
      if (e === 0) cpuBefore = { service: cpuSeconds(), bare: bare.cpuSeconds() };
      await timeEvent(service, `fan-out ${n} #${e}`, sendToService, e >= 0 ? serviceRun : undefined);
      if (bareSockets) await timeEvent(bareSockets, `fan-out ${n} bare #${e}`, sendToBare, e >= 0 ? bareRun : undefined);
    }
    const cpuServiceAfter = cpuSeconds();
    if (!inTurns) {
      console.log(`${''.padEnd(9)} (one server after the other: ${2 * n} sockets would pass the limit of open files, ${openFileLimits().soft})`);
      service.close();
      bareSockets = await openSockets(n, bare.url.replace('http', 'ws'), {});
      for (let e = -warmUpEvents; e < eventsPerSize; e++) {
        if (e === 0) cpuBefore.bare = bare.cpuSeconds();
        await timeEvent(bareSockets, `fan-out ${n} bare #${e}`, sendToBare, e >= 0 ? bareRun : undefined);
      }
    }
    // Each server's own CPU per event, the request included: steadier than the times on a machine whose speed
    // wanders, and what a change to the delivery itself moves (the times include the client's reading).
    const cpuPerEvent = ((cpuServiceAfter - cpuBefore.service) * 1000) / eventsPerSize;
    const bareCpuPerEvent = ((bare.cpuSeconds() - cpuBefore.bare) * 1000) / eventsPerSize;
    const [p50, p99] = [percentile(serviceRun.completions, 50), percentile(serviceRun.completions, 99)];
    const [b50, b99] = [percentile(bareRun.completions, 50), percentile(bareRun.completions, 99)];
    // Event by event, the service's time over the bare server's next to it.
    const pairRatios = serviceRun.completions.map((c, i) => c / bareRun.completions[i]!);
    Object.assign(figures, {
      [`${n}.service.connect_s`]: service.connectSeconds,
      [`${n}.service.p50_ms`]: Number(p50.toFixed(1)),
      [`${n}.service.p99_ms`]: Number(p99.toFixed(1)),
      [`${n}.service.cpu_ms_per_event`]: Number(cpuPerEvent.toFixed(2)),
      [`${n}.bare_ws.cpu_ms_per_event`]: Number(bareCpuPerEvent.toFixed(2)),
      // How much of it is the request itself, answered (the bare server answers before it broadcasts).
      [`${n}.service.answered_p50_ms`]: Number(percentile(serviceRun.answered, 50).toFixed(1)),
      [`${n}.bare_ws.answered_p50_ms`]: Number(percentile(bareRun.answered, 50).toFixed(1)),
      [`${n}.service.after_answer_p50_ms`]: Number(percentile(serviceRun.afterAnswer, 50).toFixed(1)),
      [`${n}.bare_ws.p50_ms`]: Number(b50.toFixed(1)),
      [`${n}.bare_ws.p99_ms`]: Number(b99.toFixed(1)),
      [`${n}.ratio_p50`]: Number((p50 / b50).toFixed(2)),
      [`${n}.ratio_p99`]: Number((p99 / b99).toFixed(2)),
      ...(inTurns ? { [`${n}.pair_ratio_p50`]: Number(percentile(pairRatios, 50).toFixed(2)) } : {}),
    });
    console.log(
      `${String(n).padEnd(9)} service   ${service.connectSeconds.toFixed(1).padStart(9)}   ${p50.toFixed(1).padStart(18)}   ${p99.toFixed(1).padStart(6)}   ${Math.max(...serviceRun.completions).toFixed(1).padStart(6)}   ${String(figures[`${n}.service.rss_per_connection_kib`]).padStart(15)} KiB   ${(p50 / b50).toFixed(2)}x, ${(p99 / b99).toFixed(2)}x   ${cpuPerEvent.toFixed(2)} ms CPU per event`,
    );
    console.log(
      `${''.padEnd(9)} service   answered at p50 ${percentile(serviceRun.answered, 50).toFixed(1)} ms, the last socket ${percentile(serviceRun.afterAnswer, 50).toFixed(1)} ms later (p50)${inTurns ? `; event by event over the bare server's next to it: ${percentile(pairRatios, 50).toFixed(2)}x (p50)` : ''}`,
    );
    console.log(
      `${String(n).padEnd(9)} bare ws   ${bareSockets!.connectSeconds.toFixed(1).padStart(9)}   ${b50.toFixed(1).padStart(18)}   ${b99.toFixed(1).padStart(6)}   ${Math.max(...bareRun.completions).toFixed(1).padStart(6)}   ${''.padStart(19)}   ${''.padStart(16)}   ${bareCpuPerEvent.toFixed(2)} ms CPU per event`,
    );
  } finally {
    service?.close();
    bareSockets?.close();
    await bare.stop();
    await stop();
  }
}
writeResults('fanout', figures, { events: eventsPerSize });

interface Sockets extends EventListeners {
  connectSeconds: number;
  close(): void;
}

/** Opens n sockets, 200 at a time, each answered with its welcome frame. */
async function openSockets(n: number, wsUrl: string, headers: Record<string, string>, onEventFrame: (frame: string) => void = () => undefined): Promise<Sockets> {
  const sockets: WebSocket[] = [];
  const started = Date.now();
  const opened: Sockets = { connectSeconds: 0, onContent: () => undefined, n, close: () => sockets.forEach((ws) => ws.terminate()) };
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
              opened.onContent((JSON.parse(text) as { data: { message: { content: string } } }).data.message.content);
            });
            ws.once('error', reject);
            sockets.push(ws);
          }),
        ),
      );
    }
  } catch (err) {
    opened.close();
    throw err;
  }
  opened.connectSeconds = Number(((Date.now() - started) / 1000).toFixed(1));
  return opened;
}
