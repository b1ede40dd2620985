import { expect } from 'chai';
import fc from 'fast-check';
import { type Kysely, sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { namesItsColumns, prepared, preparedShapes, statementName } from '../../src/db/prepared.ts';
import type { DB } from '../../src/db/schema.ts';
import { findConversation } from '../../src/conversations/conversation.repository.ts';
import { createConversation, createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

type Values = { text: string; n: number; at: Date; list: string[]; doc: string; maybe: string | null };

// Every kind of value a repository passes, one used twice, beside a constant the query itself holds.
const echo = (db: Kysely<DB>, p: Values) =>
  db.selectNoFrom([
    sql<string>`${p.text}::text`.as('text'),
    sql<number>`${p.n}::integer`.as('n'),
    sql<Date>`${p.at}::timestamptz`.as('at'),
    sql<string[]>`${p.list}::text[]`.as('list'),
    sql<unknown>`${p.doc}::jsonb`.as('doc'),
    sql<string | null>`${p.maybe}::text`.as('maybe'),
    sql<string>`${p.text}::text || ${'|'}::text || ${p.n}::integer`.as('twice'),
  ]);

describe('prepared statements', () => {
  it('answer what the same query built by Kysely at each call answers, whatever the values', async () => {
    const { database } = await getHarness();
    let builds = 0;
    const statement = prepared((db, p: Values) => {
      builds++;
      return echo(db, p);
    });
    const text = fc.string({ maxLength: 40 }).filter((s) => !s.includes('\0'));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          text,
          n: fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }),
          at: fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }),
          list: fc.array(text, { maxLength: 5 }),
          doc: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)).filter((s) => !s.includes('\\u0000')),
          maybe: fc.option(text, { nil: null }),
        }),
        async (values) => {
          const [fromPrepared, fromKysely] = await database.asSystem(async (trx) => [
            (await statement(trx, values)).rows,
            await echo(trx, values).execute(),
          ]);
          expect(fromPrepared).to.deep.equal(fromKysely);
          expect(fromPrepared[0]!.twice).to.equal(`${values.text}|${values.n}`);
        },
      ),
      { numRuns: 60 },
    );
    expect(builds, 'built once').to.equal(1);
  });

  it('refuses a call that leaves a value out, before anything reaches the database', async () => {
    const { database } = await getHarness();
    const statement = prepared((db, p: { a: string; b: string }) => db.selectNoFrom([sql<string>`${p.a}::text`.as('a'), sql<string>`${p.b}::text`.as('b')]));
    const queries: unknown[] = [];
    await database.asSystem(async (trx) => {
      expect(() => statement(trx, { a: 'x' } as never)).to.throw(/no value for b/);
      queries.push((await statement(trx, { a: 'x', b: 'y' })).rows[0]);
    });
    expect(queries).to.deep.equal([{ a: 'x', b: 'y' }]);
  });

  it('PostgreSQL keeps them prepared under their names, through a column added while they are (a rolling deploy)', async function () {
    const { database } = await getHarness();
    if (database.kind !== 'postgres') this.skip();
    const t = await createTenant();
    const c = await createConversation(t);
    const anyColumns = prepared((db, p: { id: string }) => db.selectFrom('conversations').selectAll().where('id', '=', p.id));
    const read = () =>
      database.withTenant(t.tenantId, async (trx) => {
        const row = await findConversation(trx, c.id, t.owner.userId);
        await anyColumns(trx, { id: c.id });
        const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx);
        return { row, statements: rows.map((r) => r.statement) };
      });
    const before = await read();
    // By its end too: a list page, prepared on the same connection by an earlier test, also selects unread_count.
    const isTheRead = (s: string) => s.includes('from "conversations"') && s.includes('"unread_count"') && /where "id" = \$\d+$/.test(s);
    expect(before.statements.filter(isTheRead), 'the conversation read, named').to.have.length(1);
    expect(before.statements.filter((s) => s.includes('select * from "conversations"')), 'a select * is never named').to.deep.equal([]);
    await sql`alter table conversations add column rolling_deploy_probe integer`.execute(database.db);
    try {
      // Each connection of the pool that prepared it, and new ones, in turn and at once.
      for (let i = 0; i < 5; i++) expect((await read()).row).to.deep.equal(before.row);
      const together = await Promise.all(Array.from({ length: 12 }, () => read()));
      for (const { row } of together) expect(row).to.deep.equal(before.row);
    } finally {
      await sql`alter table conversations drop column rolling_deploy_probe`.execute(database.db);
    }
  });

  it("a named statement whose answer changed type fails once, and its connection is replaced", async function () {
    const { database } = await getHarness();
    if (database.kind !== 'postgres') this.skip();
    // A pool of its own, of one connection, and a table of its own: the harness's connections never see it.
    const own = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: '.', poolMax: 1 });
    const table = `named_probe_${process.pid}`;
    const statement = prepared((db, p: { id: number }) => (db as unknown as Kysely<any>).selectFrom(table).select(['id', 'v']).where('id', '=', p.id));
    const read = async () => (await statement(own.db as never, { id: 1 })).rows[0];
    try {
      await sql.raw(`create table ${table} (id integer primary key, v varchar(10)); insert into ${table} values (1, 'a')`).execute(own.db);
      expect(await read()).to.deep.equal({ id: 1, v: 'a' });
      // A migration of a rolling deploy changes the column's type under the running statement.
      await sql.raw(`alter table ${table} alter column v type text`).execute(own.db);
      const failed = await read().then(() => undefined, (err: { code?: string }) => err);
      expect(failed, 'the one read that meets the stale statement').to.have.property('code', '0A000');
      expect(await read(), 'on the connection that replaced it').to.deep.equal({ id: 1, v: 'a' });
      expect(await read()).to.deep.equal({ id: 1, v: 'a' });
    } finally {
      await sql.raw(`drop table if exists ${table}`).execute(own.db);
      await own.close();
    }
  });

  it('a query of many shapes names only as many as it may, so the shapes callers choose cannot take every name', async () => {
    const { database } = await getHarness();
    // A marker of this run: the names are the process's, and another run of this test must not have compiled these.
    const marker = Math.floor(Math.random() * 1e9);
    const query = (db: Kysely<DB>, k: number) => db.selectNoFrom([sql.raw<number>(`${marker + k}`).as('k'), sql<number>`${marker}::integer`.as('m')]);
    const shapes = preparedShapes((db, _p: Record<string, never>, shape: { k: number }) => query(db, shape.k), { names: 2 });
    for (const k of [1, 2, 3, 1]) expect((await database.asSystem((trx) => shapes(trx, { k }, {}))).rows).to.deep.equal([{ k: marker + k, m: marker }]);
    const named = [1, 2, 3].map((k) => statementName(query(database.db, k).compile().sql) !== undefined);
    expect(named).to.deep.equal([true, true, false]);
  });

  it('only a statement that names its columns may be kept by name: every form of * is refused, count(*) is not', async () => {
    const { database } = await getHarness();
    const db = database.db;
    const compiled = (q: { compile(): { sql: string } }) => q.compile().sql;
    const refused = [
      compiled(db.selectFrom('conversations').selectAll()),
      compiled(db.selectFrom('conversations').distinct().selectAll()),
      compiled(db.selectFrom('conversations').distinctOn('status').selectAll()),
      compiled(db.selectFrom('conversations').selectAll('conversations')),
      compiled(db.withSchema('public').selectFrom('conversations').selectAll('conversations')),
      compiled(db.selectFrom('conversations').select(['id']).select(sql`conversations.*`.as('x'))),
      compiled(db.insertInto('contacts').values({ id: 'x', tenant_id: 'y', name: 'z' }).returningAll()),
      compiled(db.updateTable('contacts').set({ name: 'z' }).returningAll()),
    ];
    for (const text of refused) expect(namesItsColumns(text), text).to.equal(false);
    const kept = [
      compiled(db.selectFrom('conversations').select(['id', 'status']).where('id', '=', 'x')),
      compiled(db.selectFrom('conversations').select((eb) => eb.fn.countAll().as('n'))),
      compiled(db.insertInto('contacts').values({ id: 'x', tenant_id: 'y', name: 'z' }).returning(['id'])),
    ];
    for (const text of kept) expect(namesItsColumns(text), text).to.equal(true);
  });

  it("a statement kept by name on one connection never shows one tenant another's rows, with a generic plan", async function () {
    const { database } = await getHarness();
    if (database.kind !== 'postgres') this.skip();
    const a = await createTenant();
    const b = await createTenant();
    const [ca, cb] = [await createConversation(a), await createConversation(b)];
    // One connection for every transaction, planning generically from the first execution on.
    const own = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: '.', poolMax: 1 });
    try {
      await sql`set plan_cache_mode = force_generic_plan`.execute(own.db);
      for (let i = 0; i < 8; i++) {
        for (const [tenant, mine, theirs] of [[a, ca, cb], [b, cb, ca]] as const) {
          const seen = await own.withTenant(tenant.tenantId, async (trx) => ({
            mine: await findConversation(trx, mine.id, tenant.owner.userId),
            theirs: await findConversation(trx, theirs.id, tenant.owner.userId),
          }));
          expect(seen.mine?.id).to.equal(mine.id);
          expect(seen.theirs, `round ${i}`).to.equal(undefined);
        }
      }
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements where statement like '%"unread_count"%'`.execute(own.db);
      expect(rows[0]!.n, 'the read was kept by name').to.equal(1);
    } finally {
      await own.close();
    }
  });
});
