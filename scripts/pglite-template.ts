// Builds the embedded database's template (src/db/pglite-template.ts): a PGlite data directory created and
// migrated once, so that a first start copies it instead of running initdb and every migration.
// Run by postinstall; never fails the install (a start without a template is only slower).
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { templateDir } from '../src/db/pglite-template.ts';

try {
  const target = await templateDir();
  if (await stat(`${target}/PG_VERSION`).catch(() => undefined)) {
    console.log(`pglite template: ${target} is up to date`);
  } else {
    await mkdir(dirname(target), { recursive: true });
    const building = `${target}.building-${process.pid}`;
    await rm(building, { recursive: true, force: true });
    const started = Date.now();
    const database = await openDatabase({ databaseUrl: `pglite://${building}`, dataDir: building, poolMax: 1 });
    await migrateToLatest(database.db);
    await database.close();
    await rm(`${building}.lock`, { force: true });
    await rename(building, target).catch(async (err: NodeJS.ErrnoException) => {
      // Another install built it meanwhile: keep theirs.
      await rm(building, { recursive: true, force: true });
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
    console.log(`pglite template: built ${target} in ${Date.now() - started} ms`);
  }
} catch (err) {
  console.warn(`pglite template: not built (${err instanceof Error ? err.message : String(err)}); first starts run initdb and the migrations`);
}
