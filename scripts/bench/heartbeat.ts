// The event loop's cost of one WebSocket heartbeat (src/realtime/upkeep.ts), with the database and presence
// answered at once: N sockets of one login and N visitor sockets of one tenant, the worst grouping there is.
//   npm run bench:heartbeat            (BENCH_SOCKETS=1000,10000,50000)
import pino from 'pino';
import type { Connection } from '../../src/realtime/connection.ts';
import { heartbeat, type UpkeepContext } from '../../src/realtime/upkeep.ts';

const sizes = (process.env.BENCH_SOCKETS ?? '1000,10000,50000').split(',').map(Number);
const ws = { ping: () => undefined, close: () => undefined, terminate: () => undefined };
const ctx = {
  database: { withTenant: async () => undefined },
  presence: { refresh: async () => undefined },
  findSession: async () => ({ sessionLive: true, membership: { role: 'agent' } }),
  apiKeyLive: async () => true,
  logger: pino({ level: 'silent' }),
} as unknown as UpkeepContext;

function sockets(n: number): Set<Connection> {
  const all = new Set<Connection>();
  for (let i = 0; i < n; i++) {
    const common = { ws, tenantId: 'tn_bench', status: 'online', alive: true, backlog: undefined, expiresAt: undefined, expiryTimer: undefined };
    all.add({ ...common, id: `m${i}`, audience: { kind: 'member', userId: 'usr_bench', sessionId: 'ses_bench', role: 'agent' } } as unknown as Connection);
    all.add({ ...common, id: `v${i}`, audience: { kind: 'visitor', visitorId: `vis_${i}` } } as unknown as Connection);
  }
  return all;
}

console.log('sockets (members of one login + visitors of one tenant)   heartbeat ms (median of 5)');
for (const n of sizes) {
  const times: number[] = [];
  for (let round = 0; round < 5; round++) {
    const all = sockets(n);
    const started = performance.now();
    await heartbeat(ctx, all);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(`${`${n} + ${n}`.padEnd(57)} ${times[2]!.toFixed(1).padStart(8)}`);
}
