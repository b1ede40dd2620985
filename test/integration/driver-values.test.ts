import { expect } from 'chai';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/db/database.ts';

// Both drivers answer int8 values, and arrays of them, as numbers (src/db/database.ts): a report's cached
// block of days is read as arrays of int8 (report_block_grid), and src/db/schema.ts types them number[]
// (npm run db:types checks the types against the database's columns, not what a driver hands back).
describe('values as the drivers answer them', () => {
  const engines = [
    { name: 'PGlite', url: 'pglite://memory' },
    ...(process.env.DATABASE_URL?.startsWith('postgres') ? [{ name: 'PostgreSQL', url: process.env.DATABASE_URL }] : []),
  ];
  for (const engine of engines) {
    it(`${engine.name}: int8 and int8[] as numbers, nulls kept, past 2^31`, async () => {
      const database: Database = await openDatabase({ databaseUrl: engine.url, dataDir: '', poolMax: 1 });
      try {
        const { rows } = await sql<{ one: unknown; many: unknown; none: unknown }>`
          select 20000000000::bigint as one, array[1, null, 20000000000, -3]::bigint[] as many, '{}'::bigint[] as none`.execute(database.db);
        expect(rows[0]).to.deep.equal({ one: 20000000000, many: [1, null, 20000000000, -3], none: [] });
      } finally {
        await database.close();
      }
    });
  }
});
