// Start to healthy on the embedded default (PGlite under DATA_DIR), beside PGlite alone, in one run:
//   first start   the service on an empty data directory, from spawn until /api/health answers, with the
//                 PGlite template built at install (the default) and without it (PGLITE_TEMPLATE=false)
//                 beside: a process that creates PGlite in an empty directory and runs one query
//   restart       the service again on that directory; beside: a process that opens that same directory
//                 as the service opens it (with pg_trgm, which its schema uses) and runs one query
// The service is started as `npm start` starts it (node src/main.js), without npm.
// Each is timed from spawn to its first answer (the health check's, the query's): neither pays for its
// shutdown, which the service never does before it answers. (Until 2026-11-28 the PGlite processes were
// timed to their exit and the reopen was of a directory PGlite alone had made: those figures had other
// names, and their runs stay on record under them.)
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

/**
 * ms from spawning `node args` until it answers: with a health URL, until that answers (then it is
 * stopped); without, until it writes its first line to stdout, or until it exits if it writes none.
 */
function timed(args: string[], env: Record<string, string | undefined> = {}, healthUrl?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // undefined removes a variable: the embedded default is what runs when DATABASE_URL is unset.
    const childEnv = Object.fromEntries(Object.entries({ ...process.env, LOG_LEVEL: 'warn', ...env }).filter(([, v]) => v !== undefined));
    const child = spawn(process.execPath, args, { cwd: root, env: childEnv, stdio: ['ignore', healthUrl ? 'ignore' : 'pipe', 'inherit'] });
    let answered: number | undefined;
    child.stdout?.once('data', () => (answered ??= performance.now() - t0));
    child.stdout?.resume();
    child.once('exit', (code) => {
      if (code !== 0 && !healthUrl) reject(new Error(`${args.join(' ')} exited with ${code}`));
      else if (answered !== undefined) resolve(answered);
      else if (!healthUrl) resolve(performance.now() - t0);
      else reject(new Error(`${args.join(' ')} exited (${code}) before it answered`));
    });
    if (healthUrl) {
      const poll = async () => {
        const ok = await fetch(healthUrl).then((r) => r.ok, () => false);
        if (ok) {
          answered = performance.now() - t0;
          child.kill('SIGTERM');
        } else setTimeout(() => void poll(), 10);
      };
      void poll();
    }
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// PGlite alone: node, the import, the open and one query; the line it writes then is the answer timed.
const PGLITE = `
  import { PGlite } from '@electric-sql/pglite';
  const db = await PGlite.create({ dataDir: process.argv[1] });
  await db.query('select 1');
  process.stdout.write('answered\\n');
  await db.close();
`;
// The service's directory opened as the service opens it (src/db/database.ts): its schema uses pg_trgm.
const PGLITE_REOPEN = `
  import { PGlite } from '@electric-sql/pglite';
  import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
  const db = await PGlite.create({ dataDir: process.argv[1], extensions: { pg_trgm } });
  await db.query('select 1');
  process.stdout.write('answered\\n');
  await db.close();
`;
// As src/main.js loads them: with Node's compile cache on and the dependency bundles (src/dependency-bundles.js).
const MODULES = `
  (await import('node:module')).enableCompileCache();
  (await import('./src/dependency-bundles.js')).useDependencyBundles();
  await import('./src/service.ts');
`;
const BUILD = `
  (await import('node:module')).enableCompileCache();
  (await import('./src/dependency-bundles.js')).useDependencyBundles();
  const { buildApp } = await import('./src/app.ts');
  const pino = (await import('pino')).default;
  buildApp({ config: { validateResponses: true, appUrl: 'http://x', rateLimits: { perMinute: 1, login: 1, forgotPassword: 1, widgetSessions: 1, widgetConversations: 1, widgetMessages: 1, widgetUploads: 1 }, trustProxy: false, requireHttps: false },
    logger: pino({ level: 'silent' }), database: {}, tokens: {}, passwords: {}, mailer: {} });
`;

const figures: Record<string, number[]> = {};
const add = (name: string, ms: number) => (figures[name] ??= []).push(ms);
for (let r = 0; r < rounds; r++) {
  const pgliteDir = mkdtempSync(join(tmpdir(), 'bench-pglite-'));
  add('pglite.create_to_answer_ms', await timed(['--input-type=module', '-e', PGLITE, pgliteDir]));
  rmSync(pgliteDir, { recursive: true, force: true });

  const dataDir = mkdtempSync(join(tmpdir(), 'bench-start-'));
  const env = { DATA_DIR: dataDir, DATABASE_URL: undefined, REDIS_URL: undefined, HOST: '127.0.0.1' };
  let port = await freePort();
  const coldDir = mkdtempSync(join(tmpdir(), 'bench-start-cold-'));
  add(
    'service.first_start_without_template_ms',
    await timed(['src/main.js'], { ...env, DATA_DIR: coldDir, PGLITE_TEMPLATE: 'false', PORT: String(port) }, `http://127.0.0.1:${port}/api/health`),
  );
  rmSync(coldDir, { recursive: true, force: true });
  port = await freePort();
  add('service.first_start_ms', await timed(['src/main.js'], { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/api/health`));
  port = await freePort();
  add('service.restart_ms', await timed(['src/main.js'], { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/api/health`));
  add('pglite.reopen_same_dir_ms', await timed(['--input-type=module', '-e', PGLITE_REOPEN, join(dataDir, 'pglite')]));
  rmSync(dataDir, { recursive: true, force: true });

  add('modules.load_ms', await timed(['--input-type=module', '-e', MODULES], { DATA_DIR: tmpdir() }));
  add('modules.load_and_build_app_ms', await timed(['--input-type=module', '-e', BUILD]));
}

const m = Object.fromEntries(Object.entries(figures).map(([k, xs]) => [k, Math.round(median(xs))]));
const first = m['service.first_start_ms']! / m['pglite.create_to_answer_ms']!;
const cold = m['service.first_start_without_template_ms']! / m['pglite.create_to_answer_ms']!;
const restart = m['service.restart_ms']! / m['pglite.reopen_same_dir_ms']!;
console.log(`start benchmark: ${cpus().length} cores, median of ${rounds} rounds, embedded PGlite\n`);
console.log('what                                          ms');
for (const [k, v] of Object.entries(m)) console.log(`${k.padEnd(40)} ${String(v).padStart(7)}`);
console.log(`\nfirst start: ${first.toFixed(2)}x PGlite creating and opening an empty directory (${cold.toFixed(2)}x without the template)`);
console.log(`restart:     ${restart.toFixed(2)}x PGlite reopening it`);
writeResults('start', { ...m, 'ratio.first_start_of_pglite_create_to_answer': Number(first.toFixed(2)), 'ratio.first_start_without_template_of_pglite_create_to_answer': Number(cold.toFixed(2)), 'ratio.restart_of_pglite_reopen_same_dir': Number(restart.toFixed(2)) }, { rounds });
