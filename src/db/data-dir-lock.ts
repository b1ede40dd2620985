import { randomUUID } from 'node:crypto';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';

/**
 * PGlite is one process's database: a second process writing the same data directory corrupts it
 * (the seed script beside a running service left a unique index naming users the table no longer had).
 * The owner's pid is kept in a lock file beside the directory; a lock whose process is gone is taken over.
 */
export class DataDirLockedError extends Error {
  readonly pid: number;

  constructor(dataDir: string, lockFile: string, pid: number) {
    super(
      `The embedded database in ${dataDir} is in use by process ${pid} (lock file ${lockFile}). ` +
        'PGlite allows one process per data directory: stop that process first (for `npm run seed`, stop the service), ' +
        'or use PostgreSQL (DATABASE_URL) to share a database between processes.',
    );
    this.name = 'DataDirLockedError';
    this.pid = pid;
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

// The locks this process holds: its own pid in a lock file is a second open here, not a stale lock
// (unless this process does not hold it: a container restarted with the same pid).
const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const readPid = async (file: string): Promise<number | undefined> => {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  const pid = Number(text?.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
};

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = `${dataDir}.lock`;
  // Written whole, then linked into place: the lock file never exists without its pid.
  const draft = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(draft, `${process.pid}\n`);
  try {
    return await takeLock(dataDir, file, draft);
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

async function takeLock(dataDir: string, file: string, draft: string): Promise<DataDirLock> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await link(draft, file);
      held.add(file);
      return {
        file,
        release: async () => {
          if (!held.delete(file)) return;
          if ((await readPid(file)) === process.pid) await unlink(file).catch(() => undefined);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = await readPid(file);
    const stale = pid === undefined || (pid === process.pid ? !held.has(file) : !alive(pid));
    if (!stale) throw new DataDirLockedError(dataDir, file, pid!);
    // Taken over only if it still names the dead owner: another process may have just taken it over.
    if ((await readPid(file)) === pid) await unlink(file).catch(() => undefined);
  }
  throw new Error(`Could not take the lock ${file}: other processes keep taking it`);
}
