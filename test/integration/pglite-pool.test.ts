import { PGlite } from '@electric-sql/pglite';
import { expect } from 'chai';
import fc from 'fast-check';
import { sql } from 'kysely';
import { findConversation } from '../../src/conversations/conversation.repository.ts';
import { openDatabase } from '../../src/db/database.ts';
import { prepared } from '../../src/db/prepared.ts';
import { PGlitePool } from '../../src/db/pglite-pool.ts';
import { createConversation, createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

// The embedded database runs statements with parameters by name (src/db/pglite-pool.ts): these hold that
// the answers are PGlite's own, that statements are kept within a bound, and that a stale one recovers.
describe('PGlite statements run by name', () => {
  let db: PGlite;
  before(async () => {
    db = await PGlite.create();
    await db.exec('create table probe (id integer primary key, v varchar(10))');
    await db.query('insert into probe values (1, $1)', ['a']);
  });
  after(() => db.close());

  const run = async (pool: PGlitePool, text: string, params: unknown[]) => {
    const client = await pool.connect();
    try {
      return await client.query<Record<string, unknown>>(text, params);
    } finally {
      client.release();
    }
  };
  const preparedNow = async () => (await db.query<{ statement: string }>('select statement from pg_prepared_statements order by prepare_time')).rows.map((r) => r.statement);

  it("answers what PGlite's own query answers, for every kind of value, and prepares the statement once", async () => {
    const pool = new PGlitePool(db, { prepare: () => true });
    const text = `select $1::text as text, $2::integer as n, $3::jsonb as doc, $4::text[] as list, $5::timestamptz as at, $6::boolean as yes,
      $7::text as maybe, $8::bigint as big, (select v from probe where id = $9) as v, $1 || '|' || $2 as twice`;
    const text0 = fc.string().filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          text0,
          fc.integer(),
          // As Kysely passes JSON: already a string.
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)).filter((s) => !s.includes('\\u0000')),
          fc.array(text0, { maxLength: 4 }),
          fc.date({ min: new Date('1970-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }),
          fc.boolean(),
          fc.option(text0, { nil: null }),
          fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
          fc.constantFrom(1, 2),
        ),
        async (values) => {
          // An error would be compared too (its code and message).
          const outcome = (p: Promise<{ rows: unknown[] }>) => p.then((r) => r.rows, (err: { code?: string; message?: string }) => ({ code: err.code, message: err.message }));
          const named = await outcome(run(pool, text, values));
          expect(named).to.deep.equal(await outcome(db.query(text, values)));
        },
      ),
      { numRuns: 100 },
    );
    expect((await preparedNow()).filter((s) => s === text)).to.have.length(1);
  });

  it('counts the rows a write touched, and inside a transaction an error keeps its code and the statement stays usable after the rollback', async () => {
    const pool = new PGlitePool(db, { prepare: () => true });
    const client = await pool.connect();
    try {
      const insert = 'insert into probe (id, v) values ($1, $2)';
      await client.query('begin', []);
      expect((await client.query(insert, [10, 'x'])).rowCount).to.equal(1);
      expect((await client.query('update probe set v = $1 where id = $2', ['y', 999])).rowCount).to.equal(0);
      const duplicate = await client.query(insert, [10, 'x']).then(() => undefined, (err: { code?: string }) => err);
      expect(duplicate).to.have.property('code', '23505');
      await client.query('rollback', []);
      await client.query('begin', []);
      expect((await client.query(insert, [10, 'x'])).rowCount).to.equal(1);
      await client.query('rollback', []);
    } finally {
      client.release();
    }
    expect((await db.query('select count(*)::int as n from probe where id = 10')).rows).to.deep.equal([{ n: 0 }]);
  });

  it('keeps at most its bound of statements, letting go of the least recently used, which comes back when needed', async () => {
    const pool = new PGlitePool(db, { prepare: () => true, maxPrepared: 3 });
    const before = await preparedNow();
    const statement = (i: number) => `select v, ${i} as k from probe where id = $1`;
    for (const i of [1, 2, 3, 1, 4, 5]) expect((await run(pool, statement(i), [1])).rows).to.deep.equal([{ v: 'a', k: i }]);
    // 2 and 3 were the least recently used when 4 and 5 came.
    expect((await preparedNow()).filter((s) => !before.includes(s))).to.have.members([statement(1), statement(4), statement(5)]);
    expect((await run(pool, statement(2), [1])).rows).to.deep.equal([{ v: 'a', k: 2 }]);
    expect((await preparedNow()).filter((s) => !before.includes(s))).to.have.members([statement(4), statement(5), statement(2)]);
  });

  it("a statement whose answer changed type fails once, and is prepared anew", async () => {
    const pool = new PGlitePool(db, { prepare: () => true });
    const text = 'select id, v from probe where id = $1';
    expect((await run(pool, text, [1])).rows).to.deep.equal([{ id: 1, v: 'a' }]);
    await db.exec('alter table probe alter column v type text');
    const failed = await run(pool, text, [1]).then(() => undefined, (err: { code?: string }) => err);
    expect(failed, 'the one run that meets the stale statement').to.have.property('code', '0A000');
    expect((await run(pool, text, [1])).rows).to.deep.equal([{ id: 1, v: 'a' }]);
    expect((await run(pool, text, [1])).rows).to.deep.equal([{ id: 1, v: 'a' }]);
  });

  it("the app's hot statements, and only those, run by name on the embedded database", async function () {
    const { database } = await getHarness();
    if (database.kind !== 'pglite') this.skip();
    const t = await createTenant();
    const c = await createConversation(t);
    const statements = await database.withTenant(t.tenantId, async (trx) => {
      await findConversation(trx, c.id, t.owner.userId);
      await sql`select ${'not a hot statement'}::text as probe`.execute(trx);
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx)).rows.map((r) => r.statement);
    });
    // The read findConversation makes (the conversation's own answer is another, with its queue figures).
    const reads = statements.filter((s) => s.includes('from "conversations"') && s.includes('"unread_count"') && /where "id" = \$\d+$/.test(s));
    expect(reads.filter((s) => !s.includes('"queue_position"')), 'the conversation read').to.have.length(1);
    expect(statements.filter((s) => s.includes('as probe'))).to.deep.equal([]);
  });

  it('DATABASE_NAMED_STATEMENTS=false runs every statement unnamed on the embedded database too', async () => {
    const statement = prepared((db, p: { n: number }) => db.selectNoFrom(sql<number>`${p.n}::integer + 1`.as('next')));
    const namedNow = async (named: boolean) => {
      const database = await openDatabase({ databaseUrl: 'pglite://memory', dataDir: '.', poolMax: 1, namedStatements: named });
      try {
        expect((await statement(database.db as never, { n: 41 })).rows).to.deep.equal([{ next: 42 }]);
        return (await sql<{ n: number }>`select count(*)::integer as n from pg_prepared_statements`.execute(database.db)).rows[0]!.n;
      } finally {
        await database.close();
      }
    };
    expect(await namedNow(true), 'named by default').to.equal(1);
    expect(await namedNow(false)).to.equal(0);
  });
});
