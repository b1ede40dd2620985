// Fan-out benchmark: N sockets of one tenant (1,000 and 10,000), one event published at a time (a message
// sent over REST), and the time until the last socket has it, over several events (p50, p99); plus the
// server's memory per idle connection (RSS growth over N). The server is a process of its own.
//
//   npm run bench:fanout                                  # embedded PGlite
//   DATABASE_URL=postgres://... npm run bench:fanout
//   BENCH_SOCKETS=1000,10000 BENCH_EVENTS=20 ...
import { cpus } from 'node:os';
import { WebSocket } from 'ws';
import { startProcess } from './support.ts';

const sizes = (process.env.BENCH_SOCKETS ?? '1000,10000').split(',').map(Number);
const eventsPerSize = Number(process.env.BENCH_EVENTS ?? 20);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

console.log(`fan-out benchmark: ${cpus().length} cores, ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${eventsPerSize} events per size\n`);
console.log('sockets   connect s   last socket p50 ms   p99 ms   max ms   server RSS per idle connection');
for (const n of sizes) {
  // A fresh server per size, so its memory before the sockets is a clean baseline.
  const { url: base, rssKiB, stop } = await startProcess('src/server.ts', {
    DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
    DATA_DIR: '/tmp/chat-bench-fanout',
    BCRYPT_COST: '4',
    RATE_LIMIT_PER_MINUTE: '1000000',
  });
  const post = (path: string, token: string | undefined, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  try {
    const owner = await post('/api/v1/auth/register', undefined, { email: `fanout-${n}-${Date.now()}@example.test`, password: 'benchmark password', name: 'Fan' });
    const token = owner.body.access_token as string;
    const conversation = (await post('/api/v1/conversations', token, { ...(await post('/api/v1/contacts', token, { name: 'c' }).then((r) => ({ contact_id: r.body.id }))) })).body;
    const rssBefore = rssKiB();
    const sockets: WebSocket[] = [];
    const started = Date.now();
    let onFrame: (content: string) => void = () => undefined;
    for (let i = 0; i < n; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, n - i) }, () =>
          new Promise<void>((resolve, reject) => {
            const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/ws`, { headers: { Authorization: `Bearer ${token}` } });
            ws.on('message', (raw) => {
              const text = raw.toString();
              if (text.startsWith('{"type":"welcome"')) return resolve();
              // A cheap test before parsing: only message.created frames matter here.
              if (!text.includes('"message.created"')) return;
              onFrame((JSON.parse(text) as { data: { message: { content: string } } }).data.message.content);
            });
            ws.once('error', reject);
            sockets.push(ws);
          }),
        ),
      );
    }
    const connectSeconds = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 1000));
    const perConnection = ((rssKiB() - rssBefore) * 1024) / n;
    const completions: number[] = [];
    for (let e = 0; e < eventsPerSize; e++) {
      const content = `fan-out ${n} #${e}`;
      let received = 0;
      const done = new Promise<number>((resolve) => {
        const t0 = performance.now();
        onFrame = (c) => {
          if (c === content && ++received === n) resolve(performance.now() - t0);
        };
      });
      const sent = await post('/api/v1/messages', token, { conversation_id: conversation.id, content });
      if (sent.status !== 201) throw new Error(`send failed: ${sent.status}`);
      completions.push(await done);
    }
    console.log(
      `${String(n).padEnd(9)} ${connectSeconds.toFixed(1).padStart(9)}   ${percentile(completions, 50).toFixed(1).padStart(18)}   ${percentile(completions, 99).toFixed(1).padStart(6)}   ${Math.max(...completions).toFixed(1).padStart(6)}   ${(perConnection / 1024).toFixed(1)} KiB`,
    );
    for (const ws of sockets) ws.terminate();
  } finally {
    await stop();
  }
}
