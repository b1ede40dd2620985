// Every benchmark records its figures as JSON beside its printed table (scripts/bench/results/<name>.json),
// so that `npm run bench:compare before.json after.json` can show what a change did to them and
// `npm run bench:docs` can write docs/benchmarks.md from them. A file keeps the last runs of each database
// (RUNS_KEPT), newest last: one run on a shared machine is noise, the median of a few is a figure.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** One measured figure: a flat name (what, size, server) and its value; ratios say what they are of. */
export type Figures = Record<string, number>;

/** One run of a benchmark, as recorded. */
export type Run = { date: string; node: string; cpus: number; database: string; figures: Figures } & Record<string, unknown>;

/** A results file: the benchmark's name and its last runs, oldest first. */
export type ResultsFile = { bench: string; runs: Run[] };

export const RUNS_KEPT = 5;

export const resultsDir = (root?: string) => (root ? `${root}/scripts/bench/results/` : new URL('./results/', import.meta.url).pathname);

/** The runs of a results file, whichever of its two shapes it has (one run at the top, before runs were kept). */
export function runsOf(json: unknown): Run[] {
  const file = json as Partial<ResultsFile> & Partial<Run>;
  if (Array.isArray(file.runs)) return file.runs;
  return file.figures ? [file as Run] : [];
}

export function writeResults(name: string, figures: Figures, about: Record<string, unknown> = {}): string {
  const dir = resultsDir();
  mkdirSync(dir, { recursive: true });
  const file = `${dir}${name}.json`;
  const run: Run = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    database: process.env.DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'pglite',
    ...about,
    figures,
  };
  const earlier = existsSync(file) ? runsOf(JSON.parse(readFileSync(file, 'utf8'))) : [];
  const all = [...earlier, run];
  // The last runs of each database: a run on PGlite says nothing of PostgreSQL's figures.
  const runs = all.filter((r, i) => all.slice(i + 1).filter((later) => later.database === r.database).length < RUNS_KEPT);
  const body: ResultsFile = { bench: name, runs };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  console.log(`\nfigures written to ${file} (${runs.filter((r) => r.database === run.database).length} runs on ${run.database} on record; npm run bench:docs updates docs/benchmarks.md)`);
  return file;
}

/** Numbers anywhere in a value, named by their path (`a.b`, arrays by index); everything else left out. */
export function flatFigures(value: unknown, prefix = '', out: Figures = {}): Figures {
  if (typeof value === 'number' && Number.isFinite(value)) out[prefix] = value;
  else if (Array.isArray(value)) value.forEach((v, i) => flatFigures(v, prefix ? `${prefix}.${i}` : String(i), out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatFigures(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}
