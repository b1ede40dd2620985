import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts';
import { seedFromTemplate } from './pglite-template.ts';
import { PGliteThreadPool } from './pglite-thread.ts';

// The start of the embedded database on its thread, apart from the rest of src/db (Kysely, pg, the
// prepared statements): src/server.ts imports only this before it loads the service, so PGlite's
// thread is spawned within milliseconds and opens its directory while the service's modules load.
// Reached through database.ts, the spawn would wait for that whole import graph.

/** Where the embedded database lives: `pglite://memory` (none), `pglite://<dir>`, else DATA_DIR/pglite. */
export function embeddedDataDir(databaseUrl: string | undefined, dataDir: string): string | undefined {
  if (databaseUrl === 'pglite://memory') return undefined;
  if (databaseUrl?.startsWith('pglite://')) return resolve(databaseUrl.slice('pglite://'.length));
  return resolve(join(dataDir, 'pglite'));
}

/**
 * Makes the data directory, takes its lock (one process per directory) and, when it is empty and asked to,
 * fills it from the template; answers the lock (none in memory). On failure the lock is released.
 */
export async function claimDataDir(dataDir: string | undefined, template: boolean | undefined): Promise<DataDirLock | undefined> {
  if (!dataDir) return undefined;
  await mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  try {
    if (template) await seedFromTemplate(dataDir);
    return lock;
  } catch (err) {
    await lock.release();
    throw err;
  }
}

export interface EmbeddedStart {
  lock: DataDirLock | undefined;
  /** The database open on its thread; if it fails to open, the lock is released first. */
  opened: Promise<PGliteThreadPool>;
}

/**
 * Locks the data directory, fills it from the template when empty and asked to, and starts PGlite's
 * thread; answers as soon as the thread is spawned, while the database opens (`opened`).
 *
 * The caller should let this answer before it loads more modules: Node loads a dynamic import's module
 * graph synchronously, and this function's file operations wait for the event loop in between.
 */
export async function startEmbeddedThread(options: { dataDir: string | undefined; template?: boolean | undefined; namedStatements: boolean }): Promise<EmbeddedStart> {
  const { dataDir } = options;
  const lock = await claimDataDir(dataDir, options.template);
  try {
    const opened = PGliteThreadPool.open({ dataDir, namedStatements: options.namedStatements }).catch(async (err: unknown) => {
      await lock?.release();
      throw err;
    });
    // Heard here so that a failure before anyone awaits it (the service still loading) is not unhandled.
    opened.catch(() => undefined);
    return { lock, opened };
  } catch (err) {
    await lock?.release();
    throw err;
  }
}
