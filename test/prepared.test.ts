import { expect } from 'chai';
import fc from 'fast-check';
import { type Kysely, sql } from 'kysely';
import { prepared } from '../src/db/prepared.ts';
import type { DB } from '../src/db/schema.ts';
import { findConversation } from '../src/conversations/conversation.repository.ts';
import { createConversation, createTenant } from './support/factories.ts';
import { getHarness } from './support/harness.ts';

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
    expect(before.statements.filter((s) => s.includes('from "conversations"') && s.includes('"unread_count"')), 'the conversation read, named').to.have.length(1);
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
});
