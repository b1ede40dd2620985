// `npm run bench:compare a.json b.json`: the change of every figure from a benchmark run (a) to another
// (b). Reads any results file: the numbers are taken wherever they sit (figures of scripts/bench/results.ts,
// or the rows of older files), named by their path in the JSON. Of a file that keeps several runs, the newest
// counts (`a.json` and `b.json` may be one file's copies from before and after a change).
import { readFileSync } from 'node:fs';
import { runsOf } from './results.ts';

const [a, b] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: npm run bench:compare before.json after.json');
  process.exit(2);
}

// Run details that are not measurements.
const IGNORED = new Set(['cpus', 'date', 'node', 'bench', 'database']);

function numbers(value: unknown, path: string, out: Map<string, number>) {
  if (typeof value === 'number') out.set(path, value);
  else if (Array.isArray(value)) value.forEach((v, i) => numbers(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (!(path === '' && IGNORED.has(k))) numbers(v, path ? `${path}.${k}` : k, out);
  }
}

const read = (file: string) => {
  const out = new Map<string, number>();
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const json = (runsOf(parsed).at(-1) ?? parsed) as Record<string, unknown>;
  // Figures files name their figures flat: drop the `figures.` prefix.
  numbers(json.figures ?? json, '', out);
  return { out, date: String(json.date ?? '?') };
};

const before = read(a);
const after = read(b);
const names = [...new Set([...before.out.keys(), ...after.out.keys()])];
const width = Math.max(6, ...names.map((n) => n.length));
console.log(`${'figure'.padEnd(width)}  ${'before'.padStart(12)}  ${'after'.padStart(12)}  change`);
console.log(`${''.padEnd(width)}  ${before.date.slice(0, 19).padStart(12)}  ${after.date.slice(0, 19).padStart(12)}`);
for (const name of names) {
  const x = before.out.get(name);
  const y = after.out.get(name);
  const fmt = (v: number | undefined) => (v === undefined ? '-' : String(Number(v.toFixed(3)))).padStart(12);
  const change = x === undefined || y === undefined ? (x === undefined ? 'new' : 'gone') : x === 0 ? (y === 0 ? '=' : 'n/a') : `${y >= x ? '+' : ''}${(((y - x) / Math.abs(x)) * 100).toFixed(1)}%`;
  console.log(`${name.padEnd(width)}  ${fmt(x)}  ${fmt(y)}  ${change}`);
}
