import { readdir } from 'node:fs/promises';
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';

const migrationsDir = new URL('./migrations/', import.meta.url);

// Migrations are the files in ./migrations, applied in the order of their timestamped names.
class DirectoryMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.ts')).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      migrations[file.replace(/\.ts$/, '')] = (await import(new URL(file, migrationsDir).href)) as Migration;
    }
    return migrations;
  }
}

const migrationNames = async () =>
  (await readdir(migrationsDir))
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .map((f) => f.replace(/\.ts$/, ''));

/**
 * Whether the database has recorded exactly the migrations in ./migrations. Then a start need not load
 * them (nor the migrator, its lock and its tables): a fifth of a restart on the embedded database.
 */
async function upToDate(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`select to_regclass('kysely_migration') is not null as present`.execute(db);
  if (!rows[0]?.present) return false;
  const recorded = (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((r) => r.name).sort();
  const files = await migrationNames();
  return recorded.length === files.length && recorded.every((name, i) => name === files[i]);
}

/** The advisory lock instances migrating at once take in turn ("migr" in ASCII). */
export const MIGRATION_LOCK = 0x6d696772;

/**
 * Applies the migrations not yet applied, all in one transaction that first takes MIGRATION_LOCK, so that
 * instances starting together apply them one after the other (the first applies, the others find them
 * applied). Kysely's own lock is a session lock taken outside any transaction: behind PgBouncer in
 * transaction mode the lock, the migrations and the unlock can each land on a different server connection,
 * so it would let two instances migrate at once (CREATE ROLE failing on a duplicate name) and could stay
 * on a pooled connection, stalling the next start for its whole timeout. A transaction holds one server
 * connection.
 */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  if (await upToDate(db)) return [];
  return db.connection().execute(async (conn) => {
    await sql`begin`.execute(conn);
    try {
      await sql`select pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK)})`.execute(conn);
      // Inside the transaction Kysely's session lock and its unlock share its one server connection.
      const migrator = new Migrator({ db: conn, provider: new DirectoryMigrationProvider(), disableTransactions: true });
      const { error, results } = await migrator.migrateToLatest();
      if (error) {
        const failed = results?.find((r) => r.status === 'Error')?.migrationName;
        throw new Error(`migration ${failed ?? '(unknown)'} failed: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      }
      await sql`commit`.execute(conn);
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    } catch (err) {
      await sql`rollback`.execute(conn).catch(() => undefined);
      throw err;
    }
  });
}
