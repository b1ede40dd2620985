// `npm run widget:check`: rebuilds the chat bubble into a temporary directory and fails when the committed
// widget/dist/widget.js differs from it (run `npm run widget:build` and commit), or when it is over its
// budget of 30 KB gzipped (what a visitor downloads before the bubble appears).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { WIDGET_BUDGET_BYTES, WIDGET_BUNDLE } from '../src/widgets/widget-script.ts';

const root = join(import.meta.dirname, '..', 'widget');
const outDir = await mkdtemp(join(tmpdir(), 'widget-check-'));
try {
  await build({ configFile: join(root, 'vite.config.ts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  const fresh = await readFile(join(outDir, 'widget.js'));
  const committed = await readFile(WIDGET_BUNDLE).catch(() => undefined);
  const gzipped = gzipSync(fresh, { level: 9 }).length;
  const size = `${(fresh.length / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped (budget ${WIDGET_BUDGET_BYTES / 1024} KB)`;
  if (!committed || !committed.equals(fresh)) {
    console.error(`widget/dist/widget.js is not what widget/src builds: run npm run widget:build and commit it. (${size})`);
    process.exitCode = 1;
  } else if (gzipped > WIDGET_BUDGET_BYTES) {
    console.error(`widget/dist/widget.js is over its budget: ${size}`);
    process.exitCode = 1;
  } else {
    console.log(`widget/dist/widget.js is up to date: ${size}`);
  }
} finally {
  await rm(outDir, { recursive: true, force: true });
}
