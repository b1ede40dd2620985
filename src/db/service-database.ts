import type { Config } from '../config.ts';
import { type Database, openDatabase } from './database.ts';
import type { EmbeddedStart } from './embedded.ts';

/** The database as the service opens it, from its configuration; `started`: the embedded database's thread, already started by src/server.ts. */
export const openServiceDatabase = (config: Config, onConnectionError?: (err: Error) => void, started?: Promise<EmbeddedStart>): Promise<Database> =>
  openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.databasePoolMax,
    namedStatements: config.databaseNamedStatements,
    patchedClient: config.dependencyPatches,
    template: config.pgliteTemplate,
    thread: config.pgliteThread,
    started,
    ...(onConnectionError ? { onConnectionError } : {}),
  });
