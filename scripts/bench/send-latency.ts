// One message sent at a time, each after the last was answered: the send's own latency on an idle service
// (p10, p50, p90) and the service's CPU per send (from /proc), over the second half of the sends (the first
// half warms it up). What a change to the send's statements does to its time, without the fan-out beside it.
// Figures go to scripts/bench/results/send-latency.json.
//
//   DATABASE_URL=postgres://... npm run bench:send-latency
//   BENCH_SENDS=1000 ...
import { writeResults } from './results.ts';
import { jsonPost, startProcess } from './support.ts';

const sends = Number(process.env.BENCH_SENDS ?? 1000);
const { url: base, stop, cpuSeconds } = await startProcess('src/server.ts', {
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
  DATA_DIR: '/tmp/chat-bench-send-latency',
  BCRYPT_COST: '4',
  RATE_LIMIT_PER_MINUTE: '1000000',
});
const post = jsonPost(`${base}/api/v1`);
try {
  const owner = await post('/auth/register', undefined, { email: `send-latency-${Date.now()}@example.test`, password: 'benchmark password', name: 'Latency' });
  const token = owner.body.access_token as string;
  const contact = await post('/contacts', token, { name: 'c' });
  const conversation = (await post('/conversations', token, { contact_id: contact.body.id })).body;
  const times: number[] = [];
  let cpuBefore = 0;
  for (let i = 0; i < sends; i++) {
    if (i === Math.floor(sends / 2)) cpuBefore = cpuSeconds();
    const t = performance.now();
    const sent = await post('/messages', token, { conversation_id: conversation.id, content: `latency ${i}` });
    if (sent.status !== 201) throw new Error(`send failed: ${sent.status}`);
    if (i >= Math.floor(sends / 2)) times.push(performance.now() - t);
  }
  const cpuMs = ((cpuSeconds() - cpuBefore) * 1000) / times.length;
  times.sort((a, b) => a - b);
  const at = (p: number) => Number(times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2));
  const figures = { p10_ms: at(0.1), p50_ms: at(0.5), p90_ms: at(0.9), service_cpu_ms_per_send: Number(cpuMs.toFixed(2)) };
  console.log(`send latency, ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${times.length} timed sends after ${sends - times.length} untimed`);
  console.log(`p10 ${figures.p10_ms} ms   p50 ${figures.p50_ms} ms   p90 ${figures.p90_ms} ms   service CPU ${figures.service_cpu_ms_per_send} ms per send`);
  writeResults('send-latency', figures, { sends, database: process.env.DATABASE_URL ? 'postgres' : 'pglite' });
} finally {
  await stop();
}
