// `npm run bench:balancer`: what the production topology costs a send on this machine. Side A is the stack
// of `npm run stack` (HAProxy, three instances, PgBouncer in transaction mode, a PostgreSQL primary with a
// streaming standby, Redis); side B is one instance alone, straight on the same primary (no balancer, no
// pooler, its statements prepared as an instance alone keeps them) with a Redis of its own, so that
// neither side hears the other's events. Each side gets the same load, BENCH_SENDERS senders posting
// /v1/messages with an Idempotency-Key as fast as they are answered, for BENCH_SECONDS after a warm-up;
// the sides alternate in BENCH_PAIRS pairs, the order flipped each pair, both kept running throughout.
// Figures: 2xx sends/s of each side, p50/p99, CPU seconds of every part over each phase (from /proc), and
// the ratio A to B (the median of the pairs' ratios) that issue 48's goal reads.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StackState, startStack, stopStack } from '../stack/stack.ts';
import { call, type LoadTenant, ROOT, sendMessage, setUpTenant, waitFor } from '../../test/faults/support.ts';
import { cpuSecondsSince, freePort, percentile, processCpuSeconds, processTreeCpu, startProcess } from './support.ts';
import { type Figures, writeResults } from './results.ts';

const SENDERS = Number(process.env.BENCH_SENDERS ?? 24);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 5);

// The stack's instances read these when they start (as test:chaos starts them): cheap password hashing
// for the two registrations, a rate limit the load never reaches (every request comes from one address).
process.env.BCRYPT_COST = '4';
process.env.RATE_LIMIT_PER_MINUTE = '1000000';
process.env.LOG_LEVEL ??= 'warn';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

type Side = 'stack' | 'single';

interface Phase {
  sendsPerSecond: number;
  p50: number;
  p99: number;
  failed: number;
  cpu: Record<string, number>;
}

/**
 * A Redis of its own for the single instance, in the foreground, stopped with this script; the instance's
 * /api/ready says when it is reachable.
 */
async function startRedis(): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: () => {
      process.off('exit', orphaned);
      child.kill('SIGTERM');
    },
  };
}

/** One phase of load on `base`: warm-up, then SECONDS measured; CPU of every part over the measured span. */
async function phase(base: string, tenant: LoadTenant, parts: Record<string, () => Map<number, number>>): Promise<Phase> {
  let measuring = false;
  let sending = true;
  const latencies: number[] = [];
  let failed = 0;
  const sender = async (conversationId: string) => {
    while (sending) {
      const began = performance.now();
      const sent = await sendMessage(base, tenant, conversationId, randomUUID());
      if (!measuring) continue;
      if (typeof sent.status === 'number' && sent.status >= 200 && sent.status < 300) latencies.push(performance.now() - began);
      else failed++;
    }
  };
  const senders = Promise.all(tenant.conversationIds.map((c) => sender(c)));
  await pause(WARMUP_SECONDS * 1000);
  const read = () => Object.fromEntries(Object.entries(parts).map(([name, cpu]) => [name, cpu()]));
  const before = read();
  const t0 = performance.now();
  measuring = true;
  await pause(SECONDS * 1000);
  measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  const after = read();
  sending = false;
  await senders;
  return {
    sendsPerSecond: latencies.length / elapsed,
    p50: latencies.length > 0 ? percentile(latencies, 50) : 0,
    p99: latencies.length > 0 ? percentile(latencies, 99) : 0,
    failed,
    cpu: Object.fromEntries(Object.keys(parts).map((name) => [name, cpuSecondsSince(before[name]!, after[name]!)])),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'chat-bench-balancer-'));
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
  let single: Awaited<ReturnType<typeof startProcess>> | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      await single?.stop().catch(() => undefined);
      redis?.stop();
      await stopStack(dir);
    })());
  const interrupted = () => void stopAll().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    let state: StackState;
    try {
      state = await startStack(dir);
    } catch (err) {
      // An instance of a fresh stack sometimes never gets past its migrations (test:chaos retries too).
      console.log(`the stack did not start (${err instanceof Error ? err.message.split('\n')[0] : err}); once more`);
      state = await startStack(dir);
    }
    console.log(`stack: ${state.url} over instances on ${state.instances.map((s) => s.port).join(', ')}`);

    // The single instance: a stack instance's own environment, but straight on the primary, with
    // prepared statements (the default; PgBouncer before 1.21 cannot keep them) and its own Redis.
    redis = await startRedis();
    const env = JSON.parse(readFileSync(join(dir, 'app-1.env.json'), 'utf8')) as Record<string, string>;
    delete env.PORT;
    delete env.DATABASE_NAMED_STATEMENTS;
    single = await startProcess(join(ROOT, 'src/server.ts'), { ...env, DATABASE_URL: state.directUrl, REDIS_URL: redis.url }, ['--import', join(ROOT, 'src/telemetry/preload.ts')]);
    const singleUrl = single.url;
    await waitFor('the single instance to be ready (its Redis reachable)', async () => (await call(singleUrl, 'GET', '/api/ready').catch(() => undefined))?.status === 200, 60_000);
    console.log(`single instance: ${single.url} on ${state.directUrl}`);

    const tenants: Record<Side, LoadTenant> = { stack: await setUpTenant(state.url, SENDERS), single: await setUpTenant(single.url, SENDERS) };
    const bases: Record<Side, string> = { stack: state.url, single: single.url };
    const loadStart = process.cpuUsage();
    // Each part's CPU so far by process id (one process, or PostgreSQL's postmaster and its backends).
    const one = (pid: number | undefined) => () => new Map([[pid ?? 0, processCpuSeconds(pid)]]);
    const parts: Record<string, () => Map<number, number>> = {
      haproxy: one(state.balancer.pid),
      ...Object.fromEntries(state.instances.map((s, i) => [`instance_${i + 1}`, one(s.pid)])),
      pgbouncer: one(state.pooler.pid),
      stack_redis: one(state.redis.pid),
      single: one(single.pid),
      single_redis: one(redis.pid),
      postgres_primary: () => processTreeCpu(state.primary.pid),
      postgres_standby: () => processTreeCpu(state.standby.pid),
      load_generator: () => {
        const used = process.cpuUsage(loadStart);
        return new Map([[process.pid, (used.user + used.system) / 1e6]]);
      },
    };

    // A side's own parts (the other side idles meanwhile; its CPU is recorded too, not counted).
    const own: Record<Side, string[]> = {
      stack: ['haproxy', ...state.instances.map((_, i) => `instance_${i + 1}`), 'pgbouncer', 'stack_redis', 'postgres_primary', 'postgres_standby', 'load_generator'],
      single: ['single', 'single_redis', 'postgres_primary', 'postgres_standby', 'load_generator'],
    };
    const runs: Record<Side, Phase[]> = { stack: [], single: [] };
    const ratios: number[] = [];
    console.log(`\n${SENDERS} senders, ${WARMUP_SECONDS} s warm-up then ${SECONDS} s measured per phase, ${PAIRS} pairs\n`);
    for (let pair = 0; pair < PAIRS; pair++) {
      const order: Side[] = pair % 2 === 0 ? ['stack', 'single'] : ['single', 'stack'];
      for (const side of order) {
        const result = await phase(bases[side], tenants[side], parts);
        runs[side].push(result);
        const cpu = Object.entries(result.cpu).filter(([, s]) => s >= 0.05).map(([n, s]) => `${n} ${s.toFixed(1)}`).join(', ');
        console.log(`pair ${pair + 1} ${side.padEnd(6)} ${result.sendsPerSecond.toFixed(0).padStart(5)} sends/s  p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms  failed ${result.failed}  cpu s: ${cpu}`);
      }
      ratios.push(runs.stack.at(-1)!.sendsPerSecond / runs.single.at(-1)!.sendsPerSecond);
    }

    const figures: Figures = {
      ratio: round(median(ratios)),
      ratio_of_medians: round(median(runs.stack.map((r) => r.sendsPerSecond)) / median(runs.single.map((r) => r.sendsPerSecond))),
    };
    for (const side of ['stack', 'single'] as const) {
      const of = (pick: (r: Phase) => number) => median(runs[side].map(pick));
      figures[`${side}.sends_per_s`] = round(of((r) => r.sendsPerSecond), 1);
      figures[`${side}.p50_ms`] = round(of((r) => r.p50), 1);
      figures[`${side}.p99_ms`] = round(of((r) => r.p99), 1);
      figures[`${side}.failed`] = runs[side].reduce((n, r) => n + r.failed, 0);
      // CPU seconds of each part over a measured phase (SECONDS long), the median of the pairs.
      for (const name of Object.keys(parts)) figures[`${side}.cpu_s.${name}`] = round(of((r) => r.cpu[name]!), 2);
      const total = (r: Phase) => own[side].reduce((sum, name) => sum + r.cpu[name]!, 0);
      figures[`${side}.cpu_s.total`] = round(of(total), 2);
      figures[`${side}.cpu_ms_per_send`] = round(of((r) => (total(r) * 1000) / (r.sendsPerSecond * SECONDS)), 2);
    }
    console.log(`\nratio (median of the pairs' ratios) ${figures.ratio}; of the medians ${figures.ratio_of_medians}`);
    console.log(`stack ${figures['stack.sends_per_s']} sends/s, single ${figures['single.sends_per_s']} sends/s`);
    for (const name of [...Object.keys(parts), 'total']) {
      console.log(`  cpu s ${name.padEnd(18)} stack ${String(figures[`stack.cpu_s.${name}`]).padStart(6)}  single ${String(figures[`single.cpu_s.${name}`]).padStart(6)}`);
    }
    writeResults('balancer', figures, {
      database: 'postgres',
      senders: SENDERS,
      seconds: SECONDS,
      pairs: PAIRS,
      pgbouncer: readFileSync(join(dir, 'pgbouncer', 'pgbouncer.ini'), 'utf8').includes('max_prepared_statements') ? '>= 1.21, statements prepared' : '< 1.21, no prepared statements behind it',
      redis: 'the stack its own, the single instance its own',
    });
  } finally {
    await stopAll();
  }
}

await main();
