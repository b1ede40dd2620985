// `npm run app:check`: rebuilds the team app into a temporary directory and fails when the committed
// app/dist differs from it (run `npm run app:build` and commit app/dist), or when the JavaScript of the
// first load is over its budget of 150 KB gzipped. The first load is what index.html names: its module
// script and the modules it preloads (Vite lists the entry's static imports there); the screens loaded
// when first opened (sign-up, the guide, settings) are counted apart, and printed, not budgeted.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { APP_BUDGET_BYTES, APP_DIST } from '../src/http/team-app.ts';

async function files(dir: string): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(relative(dir, path), await readFile(path));
  }
  return found;
}

const outDir = await mkdtemp(join(tmpdir(), 'app-check-'));
try {
  await build({ configFile: join(import.meta.dirname, '..', 'app', 'vite.config.ts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  const fresh = await files(outDir);
  const committed = await files(APP_DIST);
  const differ = [...new Set([...fresh.keys(), ...committed.keys()])].filter((name) => !fresh.get(name)?.equals(committed.get(name) ?? Buffer.alloc(0)) || !committed.has(name));
  const gz = (name: string) => gzipSync(fresh.get(name)!, { level: 9 }).length;
  const index = fresh.get('index.html')?.toString() ?? '';
  const firstLoad = [...index.matchAll(/<(?:script type="module"[^>]*\ssrc|link rel="modulepreload"[^>]*\shref)="\/app\/([^"]+\.js)"/g)].map((m) => m[1]!);
  const missing = firstLoad.filter((name) => !fresh.has(name));
  if (firstLoad.length === 0 || missing.length) throw new Error(`index.html names no script, or one the build did not write: ${missing.join(', ')}`);
  const gzipped = firstLoad.reduce((sum, name) => sum + gz(name), 0);
  const later = [...fresh.keys()].filter((name) => name.endsWith('.js') && !firstLoad.includes(name) && name.startsWith('assets/'));
  const lazy = later.reduce((sum, name) => sum + gz(name), 0);
  const size = `first load ${(gzipped / 1024).toFixed(1)} KB of JavaScript gzipped in ${firstLoad.length} files (budget ${APP_BUDGET_BYTES / 1024} KB); screens loaded when opened ${(lazy / 1024).toFixed(1)} KB more in ${later.length} files`;
  if (differ.length) {
    console.error(`app/dist is not what app/src builds (${differ.sort().join(', ')}): run npm run app:build and commit app/dist. (${size})`);
    process.exitCode = 1;
  } else if (gzipped > APP_BUDGET_BYTES) {
    console.error(`app/dist is over its budget: ${size}`);
    process.exitCode = 1;
  } else {
    console.log(`app/dist is up to date: ${size}`);
  }
} finally {
  await rm(outDir, { recursive: true, force: true });
}
