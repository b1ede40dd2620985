import { createHash } from 'node:crypto';
import { cp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// A new embedded database (PGlite in an empty DATA_DIR) used to run initdb in WebAssembly, then every
// migration: about 2.4 s and 0.4 s of a first start. A template is a data directory created and migrated
// once for this PGlite and these migrations, closed cleanly (`npm run pglite:template`, run after `npm ci`
// by postinstall); an empty data directory starts as a copy of it, which PGlite then merely reopens.
// Without a template (an install with --ignore-scripts, a read-only cache) a first start is as before.

const projectRoot = new URL('../../', import.meta.url);

/** Where the template of this PGlite version and these migrations (their checksums) is kept. */
export async function templateDir(): Promise<string> {
  const pglite = JSON.parse(await readFile(new URL('node_modules/@electric-sql/pglite/package.json', projectRoot), 'utf8')) as { version: string };
  const migrations = await readFile(new URL('src/db/migrations/checksums.json', projectRoot), 'utf8');
  const key = createHash('sha256').update(pglite.version).update('\0').update(migrations).digest('hex').slice(0, 16);
  return fileURLToPath(new URL(`node_modules/.cache/customer-chat/pglite-template-${key}`, projectRoot));
}

/** Fills an empty data directory from the template, if there is one; answers whether it did. */
export async function seedFromTemplate(dataDir: string): Promise<boolean> {
  if ((await readdir(dataDir).catch(() => ['(unreadable)'])).length > 0) return false;
  const template = await templateDir().catch(() => undefined);
  if (!template || !(await stat(`${template}/PG_VERSION`).catch(() => undefined))) return false;
  // Copied beside the directory, then renamed over it (still empty): a crash mid-copy leaves the data
  // directory empty, never half a database.
  const copy = `${dataDir}.seeding-${process.pid}`;
  await rm(copy, { recursive: true, force: true });
  try {
    await cp(template, copy, { recursive: true });
    await rename(copy, dataDir);
    return true;
  } catch {
    await rm(copy, { recursive: true, force: true });
    return false;
  }
}
