import type { Config } from '../config.ts';
import { type Database, openDatabase } from './database.ts';

/** The database as the service opens it, from its configuration. */
export const openServiceDatabase = (config: Config, onConnectionError?: (err: Error) => void): Promise<Database> =>
  openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.databasePoolMax,
    namedStatements: config.databaseNamedStatements,
    patchedClient: config.dependencyPatches,
    template: config.pgliteTemplate,
    thread: config.pgliteThread,
    ...(onConnectionError ? { onConnectionError } : {}),
  });
