import { PGlite } from '@electric-sql/pglite';
import { expect } from 'chai';
import fc from 'fast-check';
import { sql } from 'kysely';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.ts';
import { isUniqueViolation, TransactionAbortedError } from '../../src/db/errors.ts';
import { PGliteThreadPool } from '../../src/db/pglite-thread.ts';

// The embedded database on a thread of its own (PGLITE_THREAD, the default): what crosses the thread
// (values, rows, errors with their fields) is what PGlite answers in the process; a transaction keeps the
// one connection; a closed or broken thread refuses instead of hanging.
describe('PGlite on a thread of its own', function () {
  this.timeout(60_000);
  let pool: PGliteThreadPool;
  let inProcess: PGlite;
  before(async () => {
    pool = await PGliteThreadPool.open({ dataDir: undefined, namedStatements: true });
    inProcess = await PGlite.create({ parsers: { 20: (v: string) => Number(v) } });
    for (const run of [(text: string) => query(text, []), (text: string) => inProcess.exec(text)]) {
      await run('create table probe (id integer primary key, v varchar(10), hash bytea)');
    }
  });
  after(async () => {
    await pool.end();
    await inProcess.close();
  });

  const query = async (text: string, params: unknown[]) => {
    const client = await pool.connect();
    try {
      return await client.query<Record<string, unknown>>(text, params);
    } finally {
      client.release();
    }
  };

  it('answers what PGlite in the process answers, for every kind of value', async () => {
    const text = `select $1::text as text, $2::integer as n, $3::jsonb as doc, $4::text[] as list, $5::timestamptz as at, $6::boolean as yes,
      $7::text as maybe, $8::bigint as big, $9::bytea as bytes`;
    const text0 = fc.string().filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          text0,
          fc.integer(),
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)).filter((s) => !s.includes('\\u0000')),
          fc.array(text0, { maxLength: 4 }),
          fc.date({ min: new Date('1970-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }),
          fc.boolean(),
          fc.option(text0, { nil: null }),
          fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
          fc.uint8Array({ maxLength: 40 }),
        ),
        async (values) => {
          const outcome = (p: Promise<{ rows: unknown[] }>) => p.then((r) => r.rows, (err: { code?: string; message?: string }) => ({ code: err.code, message: err.message }));
          expect(await outcome(query(text, values))).to.deep.equal(await outcome(inProcess.query(text, values)));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("an error keeps its fields (a unique violation's code and constraint); a failed transaction's commit is TransactionAbortedError", async () => {
    await query('insert into probe (id, v) values ($1, $2)', [1, 'a']);
    const duplicate = await query('insert into probe (id, v) values ($1, $2)', [1, 'b']).then(() => undefined, (err: unknown) => err);
    expect(isUniqueViolation(duplicate, 'probe_pkey')).to.equal(true);
    expect(duplicate).to.be.instanceOf(Error).with.property('code', '23505');
    const client = await pool.connect();
    try {
      await client.query('begin', []);
      expect((await client.query('update probe set v = $1 where id = $2', ['c', 1])).rowCount).to.equal(1);
      await client.query('insert into probe (id, v) values ($1, $2)', [1, 'd']).catch(() => undefined);
      const commit = await client.query('commit', []).then(() => undefined, (err: unknown) => err);
      expect(commit).to.be.instanceOf(TransactionAbortedError);
    } finally {
      client.release();
    }
    expect((await query('select v from probe where id = $1', [1])).rows).to.deep.equal([{ v: 'a' }]);
  });

  it('hands its one connection to one transaction at a time: statements of others wait instead of joining it', async () => {
    const first = await pool.connect();
    await first.query('begin', []);
    await first.query('insert into probe (id, v) values ($1, $2)', [2, 'in tx']);
    let secondRan = false;
    const second = query('select count(*)::int as n from probe where id = $1', [2]).then((r) => {
      secondRan = true;
      return r.rows;
    });
    await first.query('select pg_sleep(0.05)', []);
    expect(secondRan, 'waits for the transaction to release the connection').to.equal(false);
    await first.query('rollback', []);
    first.release();
    expect(await second).to.deep.equal([{ n: 0 }]);
  });

  it('through the service database: a data directory reopened keeps what was committed; closed, it refuses', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pglite-thread-'));
    try {
      const open = () => openDatabase({ databaseUrl: `pglite://${dir}`, dataDir: dir, poolMax: 1, thread: true });
      const first = await open();
      await sql`create table kept (n integer)`.execute(first.db);
      await sql`insert into kept values (42)`.execute(first.db);
      await first.close();
      const again = await open();
      expect((await sql<{ n: number }>`select n from kept`.execute(again.db)).rows).to.deep.equal([{ n: 42 }]);
      await again.close();
      const refused = await sql`select 1`.execute(again.db).then(() => undefined, (err: unknown) => err);
      expect(refused).to.be.instanceOf(Error);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a directory it cannot open fails the open with the reason', async () => {
    const err = await PGliteThreadPool.open({ dataDir: '/proc/version/not-a-directory', namedStatements: true }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error).with.property('message').that.matches(/not-a-directory|ENOTDIR|ENOENT/);
  });
});
