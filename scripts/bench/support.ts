import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';

export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/**
 * Starts a server script in a process of its own (so that the load generator does not share its event
 * loop) on a free loopback port, and waits until /api/health answers.
 */
export async function startProcess(script: string, env: Record<string, string>, nodeArgs: string[] = []) {
  const port = await freePort();
  // BENCH_CPU_PROF=dir: the service writes a V8 CPU profile there when it stops (chrome://inspect, or speedscope).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, ...nodeArgs, script], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // A benchmark that fails must not leave its service running (on a shared database it keeps working).
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  child.once('exit', () => process.off('exit', orphaned));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(`${url}/api/health`).then(() => true, () => false)) break;
    if (i > 150) throw new Error(`${script} did not start`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    /** The process's resident memory, in KiB. */
    rssKiB: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]),
    /** CPU time the process has used (user + system), in seconds (Linux clock ticks of 10 ms). */
    cpuSeconds: () => {
      const { user, system } = cpuOfStat(readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
      return user + system;
    },
    pid: child.pid!,
    /** CPU time by kind of thread (threadCpu). */
    threadCpu: () => threadCpu(child.pid!),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A POST of JSON to the service, with a bearer token when given: its status and parsed body. */
export const jsonPost =
  (base: string) =>
  (path: string, token: string | undefined, body: unknown): Promise<{ status: number; body: any }> =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

/** CPU seconds used so far by every PostgreSQL process of this machine (0 on PGlite, which runs in the service). */
export function databaseCpuSeconds(): number {
  if (!process.env.DATABASE_URL) return 0;
  let seconds = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const { user, system } = cpuOfStat(stat);
      seconds += user + system;
    } catch {
      // The process ended while being read.
    }
  }
  return seconds;
}

/** CPU seconds (user + system) process `pid` has used so far; 0 once it is gone. */
export function processCpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const { user, system } = cpuOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return user + system;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds used so far by `pid` and by every process under it (a PostgreSQL postmaster and its
 * backends, apart from the other clusters of this machine), by process id: compare two readings with
 * cpuSecondsSince, since a backend that ends (an idle pool closing its connection) takes its CPU with it.
 */
export function processTreeCpu(pid: number | undefined): Map<number, number> {
  const used = new Map<number, number>();
  if (!pid) return used;
  const children = new Map<number, number[]>();
  const seconds = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
      const { user, system } = cpuOfStat(stat);
      seconds.set(Number(entry), user + system);
    } catch {
      // The process ended while being read.
    }
  }
  for (const queue = [pid]; queue.length > 0; ) {
    const next = queue.pop()!;
    if (seconds.has(next)) used.set(next, seconds.get(next)!);
    queue.push(...(children.get(next) ?? []));
  }
  return used;
}

/** CPU seconds used between two readings of processTreeCpu: by the processes of the second, from their start or the first. */
export function cpuSecondsSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** User and system CPU seconds. */
export interface CpuTimes {
  user: number;
  system: number;
}

/**
 * The CPU times of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line (utime and stime, in Linux clock
 * ticks of 10 ms). The fields are counted after the last ')': the name before it may hold spaces and ')'.
 */
function cpuOfStat(stat: string): CpuTimes {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/**
 * A Node process's CPU time so far by kind of thread, as Linux names them: `node-MainThread` (the event
 * loop), `node-V8Worker` (V8's helpers: garbage collection's parallel and concurrent work, compilation),
 * `libuv-worker` (the thread pool: file system calls, and the disk flushes they wait on), `WorkerThread`
 * (worker_threads). A thread that ended is no longer counted: compare readings of long-lived threads only.
 */
export function threadCpu(pid: number): Map<string, CpuTimes> {
  const kinds = new Map<string, CpuTimes>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const { user, system } = cpuOfStat(stat);
    const kind = kinds.get(name) ?? { user: 0, system: 0 };
    kind.user += user;
    kind.system += system;
    kinds.set(name, kind);
  }
  return kinds;
}

/** What each kind of thread used between two readings of threadCpu. */
export function threadCpuSince(before: Map<string, CpuTimes>, after: Map<string, CpuTimes>): Map<string, CpuTimes> {
  const used = new Map<string, CpuTimes>();
  for (const [name, times] of after) {
    const was = before.get(name) ?? { user: 0, system: 0 };
    used.set(name, { user: times.user - was.user, system: times.system - was.system });
  }
  return used;
}

export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** This process's limit of open files (Linux; the sockets are files), soft and hard. */
export function openFileLimits(): { soft: number; hard: number } {
  const line = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const value = (v: string | undefined) => (!v || v === 'unlimited' ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: value(line?.[1]), hard: value(line?.[2]) };
}

/** Sockets that hear one event's frame: `onContent` is called with its content and how many sockets had it. */
export interface EventListeners {
  n: number;
  onContent: (content: string, sockets?: number) => void;
}

export function newTimings() {
  return { completions: [] as number[], answered: [] as number[], afterAnswer: [] as number[] };
}

/**
 * One event: from the request that causes it to the moment the last socket has its frame. Recorded in
 * `into` unless it is a warm-up event.
 */
export async function timeEvent(sockets: EventListeners, content: string, send: (content: string) => Promise<void>, into?: ReturnType<typeof newTimings>) {
  let received = 0;
  const t0 = performance.now();
  const done = new Promise<number>((resolve) => {
    sockets.onContent = (c, count = 1) => {
      if (c === content && (received += count) === sockets.n) resolve(performance.now() - t0);
    };
  });
  await send(content);
  const answeredAt = performance.now() - t0;
  const completion = await done;
  if (!into) return;
  into.answered.push(answeredAt);
  into.completions.push(completion);
  // From the request's answer to the last socket: the send's own time (its transaction, its durable commit) left out.
  into.afterAnswer.push(Math.max(0, completion - answeredAt));
}

/** Node's flags for a server whose memory is read after a collection (memoryAfterGc). */
export const MEMORY_PROBE_ARGS = ['--expose-gc', '--import', new URL('./memory-probe.ts', import.meta.url).pathname];

/**
 * A server's memory after a garbage collection, in KiB: the server was started with MEMORY_PROBE_ARGS and
 * BENCH_MEMORY_FILE=file (scripts/bench/memory-probe.ts). Settles first: sockets just opened leave buffers
 * and timers that go within a second or two.
 */
export async function memoryAfterGc(pid: number, file: string, settleMs = 2000): Promise<{ rssKiB: number; heapKiB: number }> {
  await new Promise((r) => setTimeout(r, settleMs));
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; !existsSync(file); i++) {
    if (i > 300) throw new Error(`no memory report from process ${pid}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const usage = JSON.parse(readFileSync(file, 'utf8')) as NodeJS.MemoryUsage;
  // The heap and what lives outside it (the sockets' buffers).
  return { rssKiB: usage.rss / 1024, heapKiB: (usage.heapUsed + usage.external) / 1024 };
}
