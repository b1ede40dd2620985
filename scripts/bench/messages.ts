// Messages sent and delivered: 100 agent sockets of one tenant, and senders posting messages over REST as
// fast as the service takes them. Figures: messages/s, and the p99 from each send's answer to the frame
// reaching the last of the sockets; then, sending at half that rate (paced), the delivery p99 again.
// Beside it, in the same run and on the same server, the same senders posting to a second tenant that has
// no socket open: the ratio says what delivery costs the send throughput. The two kinds of phase alternate,
// three pairs, and the ratio is the median of the pairs': this machine's speed wanders within a run (sends
// measured ten seconds apart differed by more than delivery costs). The server is a process of its own. All
// sockets belong to the first tenant's owner (each socket receives every event of the tenant, as an agent's
// does); in the phases without, they stay open and idle.
//
//   npm run bench:messages                               # embedded PGlite
//   DATABASE_URL=postgres://... npm run bench:messages
//   BENCH_SOCKETS=100 BENCH_SENDERS=10 BENCH_SECONDS=10 ...
import { cpus } from 'node:os';
import { WebSocket } from 'ws';
import { writeResults } from './results.ts';
import { databaseCpuSeconds, jsonPost, startProcess } from './support.ts';

const socketCount = Number(process.env.BENCH_SOCKETS ?? 100);
const senders = Number(process.env.BENCH_SENDERS ?? 10);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
/** Pairs of phases, with and without sockets: an odd number, for a median. */
const pairCount = Number(process.env.BENCH_PAIRS ?? 3);

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

const { url: base, stop, cpuSeconds } = await startProcess('src/server.ts', {
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
  DATA_DIR: '/tmp/chat-bench-messages',
  BCRYPT_COST: '4',
  RATE_LIMIT_PER_MINUTE: '1000000',
});
const post = jsonPost(base);

interface Phase {
  sent: number;
  seconds: number;
  /** The service's own CPU per message sent, in ms (delivery included): steadier than the rate on a machine whose speed wanders. */
  cpuMs: number;
  /** PostgreSQL's CPU per message (every postgres process of the machine; 0 on PGlite, which is in the service). */
  databaseCpuMs: number;
  /** This process's CPU per message: the senders' HTTP and the sockets' frames. */
  clientCpuMs: number;
  /** ms from a send's answer to the last socket's frame (0 when every socket had it before the answer). */
  delivery: number[];
}

/** A tenant of its own, its owner's token and one conversation per sender. */
async function tenant(name: string) {
  const owner = await post('/api/v1/auth/register', undefined, { email: `messages-${name}-${Date.now()}@example.test`, password: 'benchmark password', name });
  const token = owner.body.access_token as string;
  const conversations: string[] = [];
  for (let i = 0; i < senders; i++) {
    const contact = await post('/api/v1/contacts', token, { name: `c${i}` });
    conversations.push((await post('/api/v1/conversations', token, { contact_id: contact.body.id })).body.id);
  }
  return { token, conversations };
}

try {
  const watched = await tenant('Watched');
  const quiet = await tenant('Quiet');
  const token = watched.token;

  // Per message content: when its send was answered, how many sockets have it, when the last did.
  const answered = new Map<string, number>();
  const seen = new Map<string, number>();
  const lastFrame = new Map<string, number>();
  const sockets: WebSocket[] = [];
  const openSockets = async () => {
    await Promise.all(
      Array.from({ length: socketCount }, () =>
        new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/ws`, { headers: { Authorization: `Bearer ${token}` } });
          ws.on('message', (raw) => {
            const text = raw.toString();
            if (text.startsWith('{"type":"welcome"')) return resolve();
            // The content is unique per send; found without parsing the whole frame.
            const m = /"content":"(bench [^"]+)"/.exec(text);
            if (!m || !text.includes('"message.created"')) return;
            const n = (seen.get(m[1]!) ?? 0) + 1;
            seen.set(m[1]!, n);
            if (n === socketCount) lastFrame.set(m[1]!, performance.now());
          });
          ws.once('error', reject);
          sockets.push(ws);
        }),
      ),
    );
  };

  /** Senders posting for `seconds`: back to back, or each paced to `rate / senders` a second. */
  async function run(label: string, { token, conversations }: { token: string; conversations: string[] }, rate?: number): Promise<Phase> {
    answered.clear();
    seen.clear();
    lastFrame.clear();
    let sent = 0;
    const cpuBefore = cpuSeconds();
    const databaseBefore = databaseCpuSeconds();
    const clientBefore = process.cpuUsage();
    const until = performance.now() + seconds * 1000;
    const t0 = performance.now();
    await Promise.all(
      conversations.map(async (conversationId, s) => {
        for (let i = 0; performance.now() < until; i++) {
          const due = rate ? t0 + ((i * senders + s) * 1000) / rate : 0;
          if (rate && due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
          const content = `bench ${label} ${s} ${i}`;
          const res = await post('/api/v1/messages', token, { conversation_id: conversationId, content });
          if (res.status !== 201) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
          answered.set(content, performance.now());
          sent++;
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    if (token === watched.token) {
      // The last frames of the run: wait until every send has reached every socket (or 10 s pass).
      const deadline = performance.now() + 10_000;
      while (lastFrame.size < answered.size && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    }
    const delivery = [...answered].map(([content, at]) => Math.max(0, (lastFrame.get(content) ?? Infinity) - at));
    const client = process.cpuUsage(clientBefore);
    const perMessage = (cpuSeconds: number) => (cpuSeconds * 1000) / Math.max(1, sent);
    return {
      sent,
      seconds: elapsed,
      delivery,
      cpuMs: perMessage(cpuSeconds() - cpuBefore),
      databaseCpuMs: perMessage(databaseCpuSeconds() - databaseBefore),
      clientCpuMs: perMessage((client.user + client.system) / 1e6),
    };
  }

  console.log(
    `messages benchmark: ${cpus().length} cores, ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${senders} senders, ${socketCount} agent sockets, ${seconds} s per phase\n`,
  );
  await openSockets();
  // A warm-up of each kind, not counted: the first seconds of a fresh server ran a fifth slower.
  await run('warm-alone', quiet);
  await run('warm-full', watched);
  const pairs: { alone: Phase; full: Phase }[] = [];
  for (let i = 0; i < pairCount; i++) pairs.push({ alone: await run(`alone${i}`, quiet), full: await run(`full${i}`, watched) });
  const rateOf = (p: Phase) => p.sent / p.seconds;
  const ratios = pairs.map((p) => rateOf(p.full) / rateOf(p.alone));
  const medianPair = pairs[ratios.indexOf([...ratios].sort((a, b) => a - b)[Math.floor(pairs.length / 2)]!)]!;
  const ratio = rateOf(medianPair.full) / rateOf(medianPair.alone);
  const alone = medianPair.alone;
  const aloneRate = rateOf(alone);
  const full: Phase = { ...medianPair.full, delivery: pairs.flatMap((p) => p.full.delivery) };
  const fullRate = rateOf(medianPair.full);
  const half = await run('half', watched, fullRate / 2);
  const halfRate = half.sent / half.seconds;
  const lost = (p: Phase) => p.delivery.filter((d) => !Number.isFinite(d)).length;
  const cpu = (p: Phase) => `${p.cpuMs.toFixed(2).padStart(7)} ${p.databaseCpuMs.toFixed(2).padStart(9)} ${p.clientCpuMs.toFixed(2).padStart(7)}`;
  console.log('phase                                   messages/s   delivery p50 ms   p99 ms   undelivered   CPU ms per message: service, PostgreSQL, this client');
  console.log(`sends, no sockets open                  ${aloneRate.toFixed(0).padStart(10)}   ${''.padStart(15)}   ${''.padStart(6)}   ${''.padStart(11)}   ${cpu(alone)}`);
  console.log(
    `sends as fast as taken, ${socketCount} sockets     ${fullRate.toFixed(0).padStart(10)}   ${percentile(full.delivery, 50).toFixed(1).padStart(15)}   ${percentile(full.delivery, 99).toFixed(1).padStart(6)}   ${String(lost(full)).padStart(11)}   ${cpu(full)}`,
  );
  console.log(
    `at half that rate                       ${halfRate.toFixed(0).padStart(10)}   ${percentile(half.delivery, 50).toFixed(1).padStart(15)}   ${percentile(half.delivery, 99).toFixed(1).padStart(6)}   ${String(lost(half)).padStart(11)}   ${cpu(half)}`,
  );
  console.log(
    `\nwith ${socketCount} sockets the sends reach ${ratio.toFixed(2)} of their rate with none open (the median of ${pairs.length} pairs of phases: ${ratios.map((r) => r.toFixed(2)).join(', ')}; the rows above are that pair's, the delivery times all pairs')`,
  );
  writeResults(
    'messages',
    {
      'no_sockets.messages_s': Math.round(aloneRate),
      'no_sockets.service_cpu_ms_per_message': Number(alone.cpuMs.toFixed(3)),
      'full.service_cpu_ms_per_message': Number(full.cpuMs.toFixed(3)),
      'half.service_cpu_ms_per_message': Number(half.cpuMs.toFixed(3)),
      'no_sockets.database_cpu_ms_per_message': Number(alone.databaseCpuMs.toFixed(3)),
      'full.database_cpu_ms_per_message': Number(full.databaseCpuMs.toFixed(3)),
      'no_sockets.client_cpu_ms_per_message': Number(alone.clientCpuMs.toFixed(3)),
      'full.client_cpu_ms_per_message': Number(full.clientCpuMs.toFixed(3)),
      'full.messages_s': Math.round(fullRate),
      'full.ratio_of_no_sockets': Number(ratio.toFixed(3)),
      'full.delivery_p50_ms': Number(percentile(full.delivery, 50).toFixed(1)),
      'full.delivery_p99_ms': Number(percentile(full.delivery, 99).toFixed(1)),
      'half.messages_s': Math.round(halfRate),
      'half.delivery_p50_ms': Number(percentile(half.delivery, 50).toFixed(1)),
      'half.delivery_p99_ms': Number(percentile(half.delivery, 99).toFixed(1)),
    },
    { sockets: socketCount, senders, seconds, pairs: pairCount },
  );
  for (const ws of sockets) ws.terminate();
} finally {
  await stop();
}
