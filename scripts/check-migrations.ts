// Migrations are frozen once committed: a database that applied one never applies it again, so an edit
// would leave databases migrated before and after it different. src/db/migrations/checksums.json holds
// the sha256 of every migration file. The check fails when a file's content differs from its checksum,
// when a file with a checksum is gone, or when a file has none yet. `--update` adds the missing
// checksums of new files and never changes or removes one.
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

// --root DIR runs against another copy of the project (the tests use it to prove the check fails).
const rootArg = process.argv.indexOf('--root');
const root = rootArg > -1 ? resolve(process.argv[rootArg + 1]!) : resolve(import.meta.dirname, '..');
const update = process.argv.includes('--update');

const dir = join(root, 'src/db/migrations');
const checksumsFile = join(dir, 'checksums.json');

const files = (await readdir(dir)).filter((f) => f.endsWith('.ts')).sort();
const recorded: Record<string, string> = JSON.parse(await readFile(checksumsFile, 'utf8').catch(() => '{}'));
const actual = new Map<string, string>();
for (const file of files) actual.set(file, createHash('sha256').update(await readFile(join(dir, file))).digest('hex'));

const problems: string[] = [];
for (const [file, sum] of Object.entries(recorded)) {
  const now = actual.get(file);
  if (now === undefined) problems.push(`${file} was removed: a committed migration stays (add a new one that undoes it)`);
  else if (now !== sum) problems.push(`${file} changed after it was committed: restore it and add a new migration instead`);
}
const missing = files.filter((f) => !(f in recorded));

if (update && missing.length > 0) {
  const next = { ...recorded };
  for (const file of missing) next[file] = actual.get(file)!;
  const sorted = Object.fromEntries(Object.entries(next).sort(([a], [b]) => a.localeCompare(b)));
  await writeFile(checksumsFile, JSON.stringify(sorted, null, 2) + '\n');
  for (const file of missing) console.log(`recorded ${file}`);
} else {
  for (const file of missing) problems.push(`${file} has no checksum: run \`npm run migrations:update\` when it is final`);
}

if (problems.length > 0) {
  for (const p of problems) console.error(`src/db/migrations/${p}`);
  process.exit(1);
}
if (!update) console.log(`${files.length} migrations match their checksums`);
