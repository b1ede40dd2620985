// `npm run migrate`: applies pending migrations to DATABASE_URL (or the embedded database under DATA_DIR).
// The service also does this at start; this is for deploy pipelines that migrate before rolling out.
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

const config = loadConfig();
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 1 });
try {
  const applied = await migrateToLatest(database.db);
  console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'nothing to apply: the database is up to date');
} finally {
  await database.close();
}
