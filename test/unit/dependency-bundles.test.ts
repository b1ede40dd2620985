import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

// src/dependency-bundles.js: kysely (and the others) from their bundles (scripts/bundle-dependencies.ts)
// in the service's process, only where a bundle for the installed version exists, and the service's code
// working through them: its database, its tokens, its ids. Each case runs in a process of its own: the hook is the process's for good.
const ROOT = new URL('../../', import.meta.url);
const run = promisify(execFile);
const kyselyVersion = (JSON.parse(readFileSync(new URL('node_modules/kysely/package.json', ROOT), 'utf8')) as { version: string }).version;

async function inProcess(script: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, timeout: 60_000 });
  return stdout.trim();
}

describe('dependency bundles', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bundles-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const useIn = (directory: string) => `
    const { useDependencyBundles } = await import('./src/dependency-bundles.js');
    const used = useDependencyBundles(new URL(${JSON.stringify(pathToFileURL(directory).href + '/')}));
    const kysely = await import('kysely');
    console.log(JSON.stringify({ used, marker: kysely.marker ?? null, resolved: import.meta.resolve('kysely') }));`;

  it('every import of kysely resolves to the bundle built for the installed version', async () => {
    writeFileSync(join(dir, `kysely@${kyselyVersion}.mjs`), 'export const marker = "bundle";\n');
    const answer = JSON.parse(await inProcess(useIn(dir))) as { used: string[]; marker: string | null; resolved: string };
    expect(answer).to.deep.equal({ used: ['kysely'], marker: 'bundle', resolved: pathToFileURL(join(dir, `kysely@${kyselyVersion}.mjs`)).href });
  });

  it('a bundle of another version, or none, leaves kysely as installed', async () => {
    writeFileSync(join(dir, 'kysely@0.0.1.mjs'), 'export const marker = "stale";\n');
    const answer = JSON.parse(await inProcess(useIn(dir))) as { used: string[]; marker: string | null; resolved: string };
    expect(answer.used).to.deep.equal([]);
    expect(answer.marker).to.equal(null);
    expect(answer.resolved).to.match(/\/node_modules\/kysely\/dist\/esm\/index\.js$/);
  });

  it('the bundles scripts/bundle-dependencies.ts builds run the service code: every migration and a query, a token signed and verified, an id', async function () {
    this.timeout(120_000);
    await run(process.execPath, ['scripts/bundle-dependencies.ts'], { cwd: ROOT, timeout: 60_000 });
    const answer = await inProcess(`
      const { useDependencyBundles } = await import('./src/dependency-bundles.js');
      const used = useDependencyBundles();
      const { TokenService } = await import('./src/auth/tokens.ts');
      const { newId } = await import('./src/shared/ids.ts');
      const tokens = new TokenService('a secret of the test, long enough');
      const claims = { visitorId: newId('visitor'), tenantId: newId('tenant'), widgetId: newId('widget') };
      const visitor = tokens.verifyVisitorToken(tokens.signVisitorToken(claims)).visitorId === claims.visitorId ? 'verified' : 'other';
      let forged = 'accepted';
      try { new TokenService('another secret').verifyVisitorToken(tokens.signVisitorToken(claims)); } catch { forged = 'refused'; }
      const id = newId('message');
      const { openDatabase } = await import('./src/db/database.ts');
      const { migrateToLatest } = await import('./src/db/migrate.ts');
      const { sql } = await import('kysely');
      const dir = ${JSON.stringify(join(dir, 'db'))};
      const database = await openDatabase({ databaseUrl: 'pglite://' + dir, dataDir: dir, poolMax: 1 });
      const applied = await migrateToLatest(database.db);
      const { rows } = await sql\`select count(*)::int as n from kysely_migration\`.execute(database.db);
      await database.close();
      console.log(JSON.stringify({ used, resolved: import.meta.resolve('kysely'), applied: applied.length, recorded: rows[0].n, visitor, forged, id }));`);
    const { used, resolved, applied, recorded, visitor, forged, id } = JSON.parse(answer.split('\n').at(-1)!) as {
      used: string[];
      resolved: string;
      applied: number;
      recorded: number;
      visitor: string;
      forged: string;
      id: string;
    };
    expect(used).to.deep.equal(['kysely', 'jsonwebtoken', 'uuid']);
    expect(visitor).to.equal('verified');
    expect(forged).to.equal('refused');
    expect(id).to.match(/^msg_/);
    expect(resolved).to.match(new RegExp(`/node_modules/\\.cache/customer-chat/bundles/kysely@${kyselyVersion.replace(/\./g, '\\.')}\\.mjs$`));
    expect(applied).to.be.greaterThan(30);
    expect(recorded).to.equal(applied);
  });
});
