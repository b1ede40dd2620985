// `npm run stack` — the production topology on this machine, from Debian's packages and without a
// container engine: HAProxy on one loopback port over three instances, PgBouncer in transaction mode, a
// PostgreSQL primary with a streaming standby, and Redis. Every piece has its own directory (and log)
// under one folder, on free loopback ports; state.json there is what `stop`, `status` and `failover`
// read. docs/deploy.md describes it; scripts/stack/topology.ts holds what it shares with the compose file.
//
//   npm run stack [-- start] [--dir .stack]   start everything, print the balancer's address
//   npm run stack -- status                   which pieces run; the balancer's /api/ready
//   npm run stack -- failover                 promote the standby and point PgBouncer at it
//   npm run stack -- stop                     stop everything and remove the folder
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { APP_ENV, haproxyConfig, INSTANCES, NAMED_STATEMENTS, pgbouncerIni } from './topology.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface StackState {
  dir: string;
  /** The balancer's address: the one URL clients use. */
  url: string;
  balancer: { port: number; pid?: number };
  instances: { port: number; pid?: number; log: string }[];
  pooler: { port: number; pid?: number; target: 'primary' | 'standby' };
  primary: { port: number; data: string; pid?: number };
  standby: { port: number; data: string; pid?: number };
  redis: { port: number; pid?: number };
  /** Connects straight to the primary, bypassing the pooler: setup, audits. */
  directUrl: string;
}

type AppEnvName = (typeof APP_ENV)[number];

const statePath = (dir: string) => join(dir, 'state.json');

export function readState(dir: string): StackState | undefined {
  return existsSync(statePath(dir)) ? (JSON.parse(readFileSync(statePath(dir), 'utf8')) as StackState) : undefined;
}

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)');
}

/** initdb, pg_ctl and PgBouncer refuse to run as root: as root, they run as the postgres user. */
const asRoot = process.getuid?.() === 0;
const postgresIds = (() => {
  if (!asRoot) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
})();

function own(path: string): void {
  if (postgresIds) chownSync(path, postgresIds.uid, postgresIds.gid);
}

function run(cmd: string, args: string[], options: { asPostgres?: boolean } = {}): string {
  const result = spawnSync(cmd, args, { encoding: 'utf8', ...(options.asPostgres && postgresIds ? postgresIds : {}), cwd: '/' });
  if (result.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}`);
  return result.stdout;
}

function ensureInstalled(): void {
  const missing = ['haproxy', 'pgbouncer', 'redis-server'].filter((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status !== 0);
  if (missing.length === 0) return;
  const packages = missing.map((cmd) => (cmd === 'redis-server' ? 'redis-server' : cmd));
  if (!asRoot) throw new Error(`missing: ${missing.join(', ')}; install them: sudo apt-get install -y --no-install-recommends ${packages.join(' ')}`);
  console.log(`installing ${packages.join(', ')} from Debian's packages`);
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

const taken = new Set<number>();
async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (!taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await Promise.resolve().then(condition).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

const ready = async (port: number) => (await fetch(`http://127.0.0.1:${port}/api/ready`, { signal: AbortSignal.timeout(2_000) })).status === 200;

/** Whether pid runs: a zombie (exited, not yet reaped by its parent) does not. */
export const alive = (pid: number | undefined): boolean => {
  if (!pid) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

const readPid = (file: string): number | undefined => (existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) || undefined : undefined);

/** A process that outlives this script, its output in `log`. */
function daemon(cmd: string, args: string[], log: string, env: NodeJS.ProcessEnv = process.env): number {
  const fd = openSync(log, 'a');
  const child = spawn(cmd, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', fd, fd] });
  child.unref();
  return child.pid!;
}

function psql(bin: string, port: number, sqlText: string, database = 'postgres'): string {
  return run(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-v', 'ON_ERROR_STOP=1', '-qAtc', sqlText]);
}

function startCluster(bin: string, data: string, port: number, socketDir: string): number | undefined {
  run(join(bin, 'pg_ctl'), ['-D', data, '-l', `${data}.log`, '-w', '-t', '60', '-o', `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1`, 'start'], { asPostgres: true });
  return readPid(join(data, 'postmaster.pid'));
}

/** PgBouncer's version, as [major, minor]. */
function pgbouncerVersion(): [number, number] {
  const match = /PgBouncer (\d+)\.(\d+)/.exec(run('pgbouncer', ['--version']));
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}

/** 1.21 keeps prepared statements across server connections in transaction mode (max_prepared_statements). */
const keepsPrepared = () => {
  const [major, minor] = pgbouncerVersion();
  return major > 1 || (major === 1 && minor >= 21);
};

function writePooler(state: StackState, target: 'primary' | 'standby'): string {
  const dir = join(state.dir, 'pgbouncer');
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(ini, pgbouncerIni({ listen: '127.0.0.1', port: state.pooler.port, target: { host: '127.0.0.1', port: state[target].port }, dir, files: true, authType: 'trust', maxPreparedStatements: keepsPrepared() ? 200 : 0 }));
  own(ini);
  state.pooler.target = target;
  return ini;
}

const began = Date.now();
const progress = (what: string) => console.log(`${((Date.now() - began) / 1000).toFixed(1).padStart(5)} s  ${what}`);

function save(state: StackState): void {
  writeFileSync(statePath(state.dir), JSON.stringify(state, null, 2) + '\n');
}

export async function startStack(dir: string): Promise<StackState> {
  const existing = readState(dir);
  if (existing && runningPids(existing).length > 0) throw new Error(`a stack runs in ${dir} already (npm run stack -- stop)`);
  rmSync(dir, { recursive: true, force: true });
  ensureInstalled();
  const bin = pgBin();
  mkdirSync(dir, { recursive: true });
  const pgDir = join(dir, 'postgres');
  const poolerDir = join(dir, 'pgbouncer');
  for (const sub of [pgDir, poolerDir, join(dir, 'redis'), join(dir, 'haproxy'), join(dir, 'app-data')]) mkdirSync(sub, { recursive: true });
  own(pgDir);
  own(poolerDir);
  const port = await freePort();
  const state: StackState = {
    dir,
    url: `http://127.0.0.1:${port}`,
    balancer: { port },
    instances: [],
    pooler: { port: await freePort(), target: 'primary' },
    primary: { port: await freePort(), data: join(pgDir, 'primary') },
    standby: { port: await freePort(), data: join(pgDir, 'standby') },
    redis: { port: await freePort() },
    directUrl: '',
  };
  state.directUrl = `postgres://chat_owner@127.0.0.1:${state.primary.port}/chat`;
  save(state);
  try {
    // The primary; replication over loopback is trusted by initdb's default pg_hba.conf.
    run(join(bin, 'initdb'), ['-D', state.primary.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { asPostgres: true });
    state.primary.pid = startCluster(bin, state.primary.data, state.primary.port, pgDir);
    save(state);
    progress(`PostgreSQL primary on ${state.primary.port}`);
    // The service's role owns its database and is not a superuser (a superuser bypasses row-level security).
    psql(bin, state.primary.port, 'CREATE ROLE chat_owner LOGIN CREATEROLE');
    psql(bin, state.primary.port, 'CREATE DATABASE chat OWNER chat_owner');
    psql(bin, state.primary.port, "SELECT pg_create_physical_replication_slot('standby')");

    // The standby: a base backup (after an immediate checkpoint, not the next scheduled one) that writes its own standby.signal and primary_conninfo (-R) and keeps
    // its place on the primary in the slot (-S), so the primary keeps the WAL it has not yet received.
    run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(state.primary.port), '-U', 'postgres', '-D', state.standby.data, '-R', '-S', 'standby', '-X', 'stream', '-c', 'fast'], { asPostgres: true });
    state.standby.pid = startCluster(bin, state.standby.data, state.standby.port, pgDir);
    save(state);
    progress(`PostgreSQL standby on ${state.standby.port}`);
    await waitFor('the standby to stream from the primary', () => psql(bin, state.primary.port, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").trim() === '1');

    // PgBouncer: with auth_type trust it still wants the role in its auth file.
    const userlist = join(poolerDir, 'userlist.txt');
    writeFileSync(userlist, '"chat_owner" ""\n');
    own(userlist);
    writePooler(state, 'primary');
    await launchPooler(state);
    progress(`PgBouncer on ${state.pooler.port}`);

    await launchRedis(state);
    progress(`Redis on ${state.redis.port}`);

    const jwtSecret = process.env.JWT_SECRET ?? randomBytes(48).toString('base64');
    for (let i = 0; i < INSTANCES; i++) {
      const instancePort = await freePort();
      const env: Record<AppEnvName, string> & { HOST: string } = {
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: String(instancePort),
        DATABASE_URL: `postgres://chat_owner@127.0.0.1:${state.pooler.port}/chat`,
        DATABASE_POOL_MAX: '10',
        DATABASE_NAMED_STATEMENTS: keepsPrepared() ? 'true' : NAMED_STATEMENTS,
        REDIS_URL: `redis://127.0.0.1:${state.redis.port}`,
        JWT_SECRET: jwtSecret,
        METRICS_TOKEN: process.env.METRICS_TOKEN ?? '',
        OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '',
        BCRYPT_COST: process.env.BCRYPT_COST ?? '12',
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
        VALIDATE_RESPONSES: 'true',
        // One folder for the three (files, mail): on one machine it is what MinIO is to the compose file.
        DATA_DIR: join(dir, 'app-data'),
        APP_URL: `${state.url}/app`,
        RATE_LIMIT_PER_MINUTE: process.env.RATE_LIMIT_PER_MINUTE ?? '1200',
        REQUIRE_HTTPS: 'false',
        TRUST_PROXY: 'loopback',
      };
      const log = join(dir, `app-${i + 1}.log`);
      // Unset rather than empty: an empty OTEL_EXPORTER_OTLP_ENDPOINT is not a URL.
      const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
      // Kept (readable by this user only: it holds the JWT secret) so that restartInstance starts it the same way.
      writeFileSync(instanceEnvPath(dir, i), JSON.stringify(set), { mode: 0o600 });
      state.instances.push({ port: instancePort, pid: launchInstance(dir, i, log), log });
      save(state);
    }
    // Together they serialise on the migration lock (a transaction-scoped advisory lock: fine through PgBouncer).
    for (const [i, instance] of state.instances.entries()) {
      await waitFor(`instance ${i + 1} to be ready (${instance.log})`, async () => {
        if (!alive(instance.pid)) throw new Error(`instance ${i + 1} exited:\n${readFileSync(instance.log, 'utf8').slice(-3000)}`);
        return ready(instance.port);
      }, 120_000).catch((err) => {
        throw err instanceof Error && err.message.startsWith('instance') ? err : new Error(`instance ${i + 1} did not become ready:\n${readFileSync(instance.log, 'utf8').slice(-3000)}`);
      });
    }

    progress(`${INSTANCES} instances ready on ${state.instances.map((s) => s.port).join(', ')}`);
    const cfg = join(dir, 'haproxy', 'haproxy.cfg');
    writeFileSync(cfg, haproxyConfig({ bind: `127.0.0.1:${port}`, log: 'stdout', backends: state.instances.map((s, i) => ({ name: `app${i + 1}`, host: '127.0.0.1', port: s.port })) }));
    run('haproxy', ['-c', '-q', '-f', cfg]);
    state.balancer.pid = daemon('haproxy', ['-db', '-f', cfg], join(dir, 'haproxy', 'haproxy.log'));
    save(state);
    await waitFor('the balancer to answer /api/ready', () => ready(port));
    return state;
  } catch (err) {
    await stopStack(dir).catch(() => undefined);
    throw err;
  }
}

const instanceEnvPath = (dir: string, index: number) => join(dir, `app-${index + 1}.env.json`);

function launchInstance(dir: string, index: number, log: string): number {
  const env = JSON.parse(readFileSync(instanceEnvPath(dir, index), 'utf8')) as Record<string, string>;
  return daemon(process.execPath, ['src/main.js'], log, { PATH: process.env.PATH, ...env });
}

async function launchRedis(state: StackState): Promise<void> {
  const redisDir = join(state.dir, 'redis');
  rmSync(join(redisDir, 'redis.pid'), { force: true });
  run('redis-server', ['--port', String(state.redis.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir, '--logfile', join(redisDir, 'redis.log'), '--daemonize', 'yes', '--pidfile', join(redisDir, 'redis.pid')]);
  await waitFor('Redis to listen and write its pid file', async () => (await listening(state.redis.port)) && readPid(join(redisDir, 'redis.pid')) !== undefined);
  state.redis.pid = readPid(join(redisDir, 'redis.pid'));
  save(state);
}

async function launchPooler(state: StackState): Promise<void> {
  const poolerDir = join(state.dir, 'pgbouncer');
  run('pgbouncer', ['-d', join(poolerDir, 'pgbouncer.ini')], { asPostgres: true });
  await waitFor('PgBouncer to listen', () => listening(state.pooler.port));
  state.pooler.pid = readPid(join(poolerDir, 'pgbouncer.pid'));
  save(state);
}

function stateOf(dir: string): StackState {
  const state = readState(dir);
  if (!state) throw new Error(`no stack in ${dir}`);
  return state;
}

/**
 * Starts instance `index` (from 0) again, on its port and with its environment, once its process is gone
 * (killed, or drained after SIGTERM); resolves when it answers /api/ready. The balancer's check takes it
 * back by itself.
 */
export async function restartInstance(dir: string, index: number): Promise<StackState> {
  const state = stateOf(dir);
  const instance = state.instances[index]!;
  if (alive(instance.pid)) throw new Error(`instance ${index + 1} runs (pid ${instance.pid})`);
  instance.pid = launchInstance(dir, index, instance.log);
  save(state);
  await waitFor(`instance ${index + 1} to be ready again (${instance.log})`, async () => {
    if (!alive(instance.pid)) throw new Error(`instance ${index + 1} exited:\n${readFileSync(instance.log, 'utf8').slice(-3000)}`);
    return ready(instance.port);
  }, 120_000);
  return state;
}

/** Stops Redis (SIGTERM; it keeps nothing on disk here), until `startRedis`. */
export async function stopRedis(dir: string): Promise<void> {
  const state = stateOf(dir);
  await terminate([state.redis.pid]);
}

/** Starts Redis again on its port, empty. */
export async function startRedis(dir: string): Promise<StackState> {
  const state = stateOf(dir);
  if (alive(state.redis.pid)) throw new Error(`Redis runs (pid ${state.redis.pid})`);
  await launchRedis(state);
  return state;
}

/** PgBouncer stopped at once (SIGTERM: its connections cut) and started again with its configuration. */
export async function restartPooler(dir: string): Promise<StackState> {
  const state = stateOf(dir);
  await terminate([state.pooler.pid]);
  await launchPooler(state);
  return state;
}

export function runningPids(state: StackState): number[] {
  return [state.balancer.pid, ...state.instances.map((s) => s.pid), state.pooler.pid, state.redis.pid, state.primary.pid, state.standby.pid].filter((pid): pid is number => alive(pid));
}

async function ended(pids: (number | undefined)[], ms: number): Promise<boolean> {
  return waitFor('', () => pids.every((pid) => !alive(pid)), ms).then(
    () => true,
    () => false,
  );
}

async function terminate(pids: (number | undefined)[]): Promise<void> {
  for (const pid of pids) if (alive(pid)) process.kill(pid!, 'SIGTERM');
  if (await ended(pids, 20_000)) return;
  for (const pid of pids) if (alive(pid)) process.kill(pid!, 'SIGKILL');
  await ended(pids, 5_000);
}

/** Stops every piece the state file names (in the order that lets each drain), then removes the folder. */
export async function stopStack(dir: string): Promise<void> {
  const state = readState(dir);
  if (!state) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  await terminate([state.balancer.pid]);
  await terminate(state.instances.map((s) => s.pid));
  await terminate([state.pooler.pid, state.redis.pid]);
  const bin = pgBin();
  for (const cluster of [state.standby, state.primary]) {
    if (!alive(cluster.pid)) continue;
    const stopped = spawnSync(join(bin, 'pg_ctl'), ['-D', cluster.data, '-m', 'fast', '-w', '-t', '30', 'stop'], { ...(postgresIds ?? {}), cwd: '/' });
    if (stopped.status !== 0) await terminate([cluster.pid]);
  }
  const left = runningPids(state);
  if (left.length > 0) throw new Error(`still running: ${left.join(', ')}; ${dir} kept`);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The standby takes over: promoted, PgBouncer pointed at it and reloaded (SIGHUP; its clients stay
 * connected). The old primary is stopped first when it still runs, so nothing writes to both.
 */
export async function failover(dir: string): Promise<StackState> {
  const state = readState(dir);
  if (!state) throw new Error(`no stack in ${dir}`);
  if (state.pooler.target === 'standby') throw new Error('the standby was promoted already');
  const bin = pgBin();
  // A fast shutdown sends the standby all the WAL it has before the primary exits: nothing committed is
  // lost. A primary that crashed instead may have acknowledged commits the (asynchronous) standby never got.
  if (alive(state.primary.pid)) run(join(bin, 'pg_ctl'), ['-D', state.primary.data, '-m', 'fast', '-w', '-t', '30', 'stop'], { asPostgres: true });
  run(join(bin, 'pg_ctl'), ['-D', state.standby.data, '-w', '-t', '60', 'promote'], { asPostgres: true });
  writePooler(state, 'standby');
  process.kill(state.pooler.pid!, 'SIGHUP');
  state.directUrl = `postgres://chat_owner@127.0.0.1:${state.standby.port}/chat`;
  save(state);
  return state;
}

async function status(dir: string): Promise<boolean> {
  const state = readState(dir);
  if (!state) {
    console.log(`no stack in ${dir}`);
    return false;
  }
  const line = (name: string, port: number, pid: number | undefined, note = '') => console.log(`${name.padEnd(12)} 127.0.0.1:${String(port).padEnd(6)} ${alive(pid) ? `running (pid ${pid})` : 'stopped'}${note}`);
  const balancerReady = await ready(state.balancer.port).catch(() => false);
  line('balancer', state.balancer.port, state.balancer.pid, balancerReady ? '  /api/ready 200' : '  /api/ready not 200');
  for (const [i, s] of state.instances.entries()) line(`instance ${i + 1}`, s.port, s.pid, (await ready(s.port).catch(() => false)) ? '  ready' : '  not ready');
  line('pgbouncer', state.pooler.port, state.pooler.pid, `  -> ${state.pooler.target}`);
  line('primary', state.primary.port, state.primary.pid);
  line('standby', state.standby.port, state.standby.pid, state.pooler.target === 'standby' ? '  (promoted)' : '');
  line('redis', state.redis.port, state.redis.pid);
  console.log(`API: ${state.url}/api/docs  ·  logs and data: ${dir}`);
  return balancerReady;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { dir: { type: 'string', default: join(ROOT, '.stack') } } });
  const dir = resolve(values.dir);
  const command = positionals[0] ?? 'start';
  try {
    if (command === 'start') {
      const state = await startStack(dir);
      console.log(`The stack runs: ${state.url} (API docs at ${state.url}/api/docs)`);
      await status(dir);
      console.log('Stop it with: npm run stack -- stop');
    } else if (command === 'stop') {
      await stopStack(dir);
      console.log(`stopped; ${dir} removed`);
    } else if (command === 'status') {
      process.exitCode = (await status(dir)) ? 0 : 1;
    } else if (command === 'failover') {
      await failover(dir);
      console.log('the standby is the primary now; PgBouncer points at it');
      await status(dir);
    } else {
      console.error(`unknown command ${command}: start, stop, status or failover`);
      process.exitCode = 2;
    }
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  }
}
