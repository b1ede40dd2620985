// Every benchmark writes its figures as JSON beside its printed table (scripts/bench/results/<name>.json),
// so that `npm run bench:compare before.json after.json` can show what a change did to them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** One measured figure: a flat name (what, size, server) and its value; ratios say what they are of. */
export type Figures = Record<string, number>;

export function writeResults(name: string, figures: Figures, about: Record<string, unknown> = {}): string {
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`${name}.json`, dir);
  const body = {
    bench: name,
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    database: process.env.DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'pglite',
    ...about,
    figures,
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  console.log(`\nfigures written to ${file.pathname}`);
  return file.pathname;
}
