import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { seedFromTemplate, templateDir } from '../../src/db/pglite-template.ts';

describe('the embedded database template', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'chat-template-'));
    dirs.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  before(() => {
    // Built by postinstall; building again is a no-op when it is there.
    const run = spawnSync(process.execPath, ['scripts/pglite-template.ts'], { encoding: 'utf8' });
    expect(run.status, run.stderr).to.equal(0);
  });

  it('an empty data directory starts as a copy of the template: migrated, nothing to apply, and its own', async () => {
    const dataDir = join(tempDir(), 'pglite');
    const database = await openDatabase({ databaseUrl: `pglite://${dataDir}`, dataDir, poolMax: 1, template: true });
    try {
      expect(await migrateToLatest(database.db), 'every migration already applied').to.deep.equal([]);
      await sql`insert into tenants (id, name) values ('tn_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a55', 'Copy')`.execute(database.db);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from tenants`.execute(database.db);
      expect(rows[0]!.n).to.equal(1);
    } finally {
      await database.close();
    }
    // The template itself did not change.
    const again = join(tempDir(), 'pglite');
    const second = await openDatabase({ databaseUrl: `pglite://${again}`, dataDir: again, poolMax: 1, template: true });
    try {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from tenants`.execute(second.db);
      expect(rows[0]!.n).to.equal(0);
    } finally {
      await second.close();
    }
  });

  it('a data directory with anything in it is never touched; without the template option nothing is copied', async () => {
    const used = tempDir();
    writeFileSync(join(used, 'PG_VERSION'), '17');
    expect(await seedFromTemplate(used)).to.equal(false);
    expect(readdirSync(used)).to.deep.equal(['PG_VERSION']);
    const empty = join(tempDir(), 'pglite');
    const database = await openDatabase({ databaseUrl: `pglite://${empty}`, dataDir: empty, poolMax: 1 });
    try {
      expect((await migrateToLatest(database.db)).length, 'a fresh database migrates from the first').to.be.greaterThan(0);
    } finally {
      await database.close();
    }
    expect(await templateDir()).to.match(/node_modules\/\.cache\/customer-chat\/pglite-template-[0-9a-f]{16}$/);
  });
});
