import { readdir } from 'node:fs/promises';
import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';

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

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
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
