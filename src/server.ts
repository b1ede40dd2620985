// The service's start (`npm start` runs it through src/main.js; `node src/server.ts` runs it directly): the
// configuration, then the service (src/service.ts), stopped
// gracefully on SIGTERM and SIGINT. It imports the service only once Node's compile cache is on: a
// restart then reads the compiled code of its thousand-odd modules from the cache instead of compiling
// them again (under the system's temporary directory, or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1
// turns it off). Statically imported, they would all be compiled before the first line here ran.
import { enableCompileCache } from 'node:module';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { RunningService } from './service.ts';

export type { RunningService } from './service.ts';

/** `opening`: the database already being opened, which the service then uses. */
export async function startService(config: Config, opening?: Promise<Database>): Promise<RunningService> {
  const service = await import('./service.ts');
  return service.startService(config, opening);
}

/** Reads the configuration and runs the service until SIGTERM or SIGINT (src/main.js, or this file run directly). */
export async function main(): Promise<void> {
  const { ConfigError, loadConfig } = await import('./config.ts');
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(78);
    }
    throw err;
  }
  // The embedded database starts opening now, and the service's modules load while it reads its files;
  // the service waits for it where it would have opened it. Its thread is spawned from a module of its
  // own (src/db/embedded.ts), before the rest of src/db is loaded. A failure to open is the service's to
  // report (startService awaits it): heard here only so that it does not count as unhandled in the meantime.
  const embedded = !config.databaseUrl || !/^postgres(ql)?:/.test(config.databaseUrl);
  const started =
    embedded && config.pgliteThread
      ? import('./db/embedded.ts').then((m) =>
          m.startEmbeddedThread({ dataDir: m.embeddedDataDir(config.databaseUrl, config.dataDir), template: config.pgliteTemplate, namedStatements: config.databaseNamedStatements }),
        )
      : undefined;
  // Waited for (its spawn, not its opening) before more modules load: see startEmbeddedThread.
  await started?.catch(() => undefined);
  const opening = embedded ? import('./db/service-database.ts').then((db) => db.openServiceDatabase(config, undefined, started)) : undefined;
  opening?.catch(() => undefined);
  const [{ default: pino }, { isConnectionError }, { DataDirLockedError }] = await Promise.all([
    import('pino'),
    import('./db/errors.ts'),
    import('./db/data-dir-lock.ts'),
  ]);
  // Work no request awaits (socket opens and frames in the realtime gateway) can reject when the
  // database goes away; that must not end the process. Any other unhandled rejection still does.
  const fallbackLogger = pino({ level: config.logLevel });
  process.on('unhandledRejection', (reason) => {
    if (!isConnectionError(reason)) throw reason;
    fallbackLogger.warn({ err: reason }, 'database connection lost under background work');
  });
  const service = await startService(config, opening).catch((err: unknown) => {
    if (!(err instanceof DataDirLockedError)) throw err;
    console.error(err.message);
    return process.exit(75);
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      service.stop().then(
        () => process.exit(0),
        (err) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
  }
}

if (import.meta.main) {
  const cache = enableCompileCache();
  // Threads started from here on (the embedded database's, the password pool's) then have the cache on
  // before their first module loads: a restart takes even their entry files' code from it, and Node's
  // TypeScript stripper (a WebAssembly module) is not loaded in them at all.
  if (cache.directory) process.env.NODE_COMPILE_CACHE ??= cache.directory;
  await main();
}
