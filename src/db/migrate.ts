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

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  if (await upToDate(db)) return [];
  const migrator = new Migrator({ db, provider: new DirectoryMigrationProvider() });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migration ${failed ?? '(unknown)'} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
