// Start to healthy on the embedded default (PGlite under DATA_DIR), beside PGlite alone, in one run:
//   first start   the service on an empty data directory, from spawn until /api/health answers, with the
//                 PGlite template built at install (the default) and without it (PGLITE_TEMPLATE=false)
//                 beside: a process that creates PGlite in an empty directory and runs one query
//   restart       the service again on that directory; beside: a process reopening a PGlite directory
// Also timed, to show where the time goes: a process that only loads the service's modules, and one
// that loads them and builds the app (contract, validator) without a database. Figures go to
// scripts/bench/results/start.json.
//
//   npm run bench:start                 BENCH_ROUNDS=3 (the median of each is reported)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeResults } from './results.ts';
import { freePort } from './support.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const root = new URL('../../', import.meta.url).pathname;

/** ms from spawning `node args` until it exits (or, with a health URL, until that answers; then it is stopped). */
function timed(args: string[], env: Record<string, string | undefined> = {}, healthUrl?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // undefined removes a variable: the embedded default is what runs when DATABASE_URL is unset.
    const childEnv = Object.fromEntries(Object.entries({ ...process.env, LOG_LEVEL: 'warn', ...env }).filter(([, v]) => v !== undefined));
    const child = spawn(process.execPath, args, { cwd: root, env: childEnv, stdio: ['ignore', 'ignore', 'inherit'] });
    let healthy: number | undefined;
    child.once('exit', (code) => {
      if (healthy !== undefined) resolve(healthy);
      else if (code === 0) resolve(performance.now() - t0);
      else reject(new Error(`${args.join(' ')} exited with ${code}`));
    });
    if (healthUrl) {
      const poll = async () => {
        const ok = await fetch(healthUrl).then((r) => r.ok, () => false);
        if (ok) {
          healthy = performance.now() - t0;
          child.kill('SIGTERM');
        } else setTimeout(() => void poll(), 10);
      };
      void poll();
    }
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const PGLITE = `
  import { PGlite } from '@electric-sql/pglite';
  const db = await PGlite.create({ dataDir: process.argv[1] });
  await db.query('select 1');
  await db.close();
`;
const MODULES = `await import('./src/server.ts');`;
const BUILD = `
  const { buildApp } = await import('./src/app.ts');
  const pino = (await import('pino')).default;
  buildApp({ config: { validateResponses: true, appUrl: 'http://x', rateLimits: { perMinute: 1, login: 1, forgotPassword: 1, widgetSessions: 1, widgetConversations: 1, widgetMessages: 1, widgetUploads: 1 }, trustProxy: false, requireHttps: false },
    logger: pino({ level: 'silent' }), database: {}, tokens: {}, passwords: {}, mailer: {} });
`;

const figures: Record<string, number[]> = {};
const add = (name: string, ms: number) => (figures[name] ??= []).push(ms);
for (let r = 0; r < rounds; r++) {
  const pgliteDir = mkdtempSync(join(tmpdir(), 'bench-pglite-'));
  add('pglite.create_ms', await timed(['--input-type=module', '-e', PGLITE, pgliteDir]));
  add('pglite.reopen_ms', await timed(['--input-type=module', '-e', PGLITE, pgliteDir]));
  rmSync(pgliteDir, { recursive: true, force: true });

  const dataDir = mkdtempSync(join(tmpdir(), 'bench-start-'));
  const env = { DATA_DIR: dataDir, DATABASE_URL: undefined, REDIS_URL: undefined, HOST: '127.0.0.1' };
  let port = await freePort();
  const coldDir = mkdtempSync(join(tmpdir(), 'bench-start-cold-'));
  add(
    'service.first_start_without_template_ms',
    await timed(['src/server.ts'], { ...env, DATA_DIR: coldDir, PGLITE_TEMPLATE: 'false', PORT: String(port) }, `http://127.0.0.1:${port}/api/health`),
  );
  rmSync(coldDir, { recursive: true, force: true });
  port = await freePort();
  add('service.first_start_ms', await timed(['src/server.ts'], { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/api/health`));
  port = await freePort();
  add('service.restart_ms', await timed(['src/server.ts'], { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/api/health`));
  rmSync(dataDir, { recursive: true, force: true });

  add('modules.load_ms', await timed(['--input-type=module', '-e', MODULES], { DATA_DIR: tmpdir() }));
  add('modules.load_and_build_app_ms', await timed(['--input-type=module', '-e', BUILD]));
}

const m = Object.fromEntries(Object.entries(figures).map(([k, xs]) => [k, Math.round(median(xs))]));
const first = m['service.first_start_ms']! / m['pglite.create_ms']!;
const cold = m['service.first_start_without_template_ms']! / m['pglite.create_ms']!;
const restart = m['service.restart_ms']! / m['pglite.reopen_ms']!;
console.log(`start benchmark: ${cpus().length} cores, median of ${rounds} rounds, embedded PGlite\n`);
console.log('what                                          ms');
for (const [k, v] of Object.entries(m)) console.log(`${k.padEnd(40)} ${String(v).padStart(7)}`);
console.log(`\nfirst start: ${first.toFixed(2)}x PGlite creating and opening an empty directory (${cold.toFixed(2)}x without the template)`);
console.log(`restart:     ${restart.toFixed(2)}x PGlite reopening it`);
writeResults('start', { ...m, 'ratio.first_start_of_pglite_create': Number(first.toFixed(2)), 'ratio.first_start_without_template_of_pglite_create': Number(cold.toFixed(2)), 'ratio.restart_of_pglite_reopen': Number(restart.toFixed(2)) }, { rounds });
