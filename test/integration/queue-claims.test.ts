import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { CompiledQuery, sql } from 'kysely';
import type { Tx } from '../../src/db/database.ts';
import { inDueOrder } from '../../src/db/due-order.ts';
import { claimDueBotDeliveries } from '../../src/bots/bot.repository.ts';
import { claimDueDeliveries } from '../../src/webhooks/webhook.repository.ts';
import { claimDueRuns } from '../../src/workflows/workflow.repository.ts';
import { createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

// A queue's claim takes the oldest few due rows. Planned from statistics older than the backlog (a table
// that grew since it was last analyzed: a burst after a quiet spell, a fresh database), a claim read every
// due row and sorted them all to keep a few: 70 ms per claim of 256 at 50,000 due, against 1.6 ms walking
// the due index in order (src/db/due-order.ts prices the sort out). Which plan stale statistics bring
// depends on how stale they are, so these tests do not stage them: they check that each claim runs with
// sorting priced out, that so planned it walks its due index without a sort, and that it then reads
// about as many rows as it claims.
const BACKLOG = 1500;
const TAKE = 50;

/** Rows of the table read so far in this transaction, by any scan. */
async function rowsRead(trx: Tx, table: string): Promise<number> {
  const { rows } = await sql<{ n: string | null }>`
    select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n from pg_stat_xact_user_tables where relname = ${table}`.execute(trx);
  return Number(rows[0]?.n ?? 0);
}

interface Queue {
  table: string;
  /** Adds BACKLOG rows due a year ago (older than what other tests leave due), under a parent of their own. */
  seed(trx: Tx, tenantId: string): Promise<unknown>;
  claim(trx: Tx): Promise<{ id: string }[]>;
}

/** Thrown to roll the test's transaction back, with what it saw. */
class RolledBack extends Error {
  readonly seen: { plan: string; claimed: { id: string }[]; read: number; control: number };
  constructor(seen: RolledBack['seen']) {
    super('rolled back');
    this.seen = seen;
  }
}

const dueAYearAgo = sql`now() - interval '1 year' + i * interval '1 ms'`;

const queues: Queue[] = [
  {
    table: 'webhook_deliveries',
    async seed(trx, tenantId) {
      const hook = `wh_${randomUUID()}`;
      await sql`insert into webhooks (id, tenant_id, url, events, secret) values (${hook}, ${tenantId}, 'https://example.test/hook', ${['*']}, 'whsec_x')`.execute(trx);
      await sql`insert into webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, body, next_attempt_at)
        select 'whd_' || gen_random_uuid(), ${tenantId}, ${hook}, 'evt_' || gen_random_uuid(), 'message.created', '{}', ${dueAYearAgo}
        from generate_series(1, ${BACKLOG}) as i`.execute(trx);
    },
    claim: (trx) => claimDueDeliveries(trx, TAKE, randomUUID(), 60_000),
  },
  {
    table: 'bot_deliveries',
    async seed(trx, tenantId) {
      const bot = `bot_${randomUUID()}`;
      await sql`insert into bots (id, tenant_id, name, kind, secret) values (${bot}, ${tenantId}, 'b', 'faq', 'whsec_x')`.execute(trx);
      await sql`insert into bot_deliveries (id, tenant_id, bot_id, conversation_id, event_id, event_type, body, next_attempt_at)
        select 'btd_' || gen_random_uuid(), ${tenantId}, ${bot}, 'cnv', 'evt_' || gen_random_uuid(), 'message.created', '{}', ${dueAYearAgo}
        from generate_series(1, ${BACKLOG}) as i`.execute(trx);
    },
    claim: (trx) => claimDueBotDeliveries(trx, TAKE, randomUUID(), 60_000),
  },
  {
    table: 'workflow_runs',
    async seed(trx, tenantId) {
      const workflow = `wf_${randomUUID()}`;
      await sql`insert into workflows (id, tenant_id, name, trigger_type, trigger, actions, secret)
        values (${workflow}, ${tenantId}, 'w', 'message.created', '{"type":"message.created"}', '[]', 'whsec_x')`.execute(trx);
      await sql`insert into workflow_runs (id, tenant_id, workflow_id, event_id, event_type, event_body, depth, next_attempt_at)
        select 'wfr_' || gen_random_uuid(), ${tenantId}, ${workflow}, 'evt_' || gen_random_uuid(), 'message.created', '{}', 1, ${dueAYearAgo}
        from generate_series(1, ${BACKLOG}) as i`.execute(trx);
    },
    claim: (trx) => claimDueRuns(trx, TAKE, randomUUID(), 60_000),
  },
];

interface Statement {
  sql: string;
  parameters: readonly unknown[];
}

/** The transaction, recording each statement it executes, compiled. */
function recording(trx: Tx, statements: Statement[]): Tx {
  const compiled = new Map<object, Statement>();
  return trx.withPlugin({
    transformQuery: (args) => {
      const query = trx.getExecutor().compileQuery(args.node, args.queryId);
      compiled.set(args.queryId, { sql: query.sql, parameters: query.parameters });
      return args.node;
    },
    // Subqueries pass through transformQuery as they are built; only what runs comes back.
    transformResult: async (args) => {
      statements.push(compiled.get(args.queryId)!);
      return args.result;
    },
  });
}

describe('queue claims: the oldest due rows, read in index order', () => {
  for (const queue of queues) {
    it(`${queue.table}: a claim runs with sorting priced out, walks its due index, and reads about as many rows as it takes`, async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const statements: Statement[] = [];
      // Rolled back at the end: the backlog leaves nothing behind.
      const { plan, claimed, read, control } = await database
        .asSystem(async (trx) => {
          await queue.seed(trx, t.tenantId);
          const before = await rowsRead(trx, queue.table);
          const claimed = await queue.claim(recording(trx, statements));
          const read = (await rowsRead(trx, queue.table)) - before;
          // The control: rows read are counted, here, on this database (a scan of the whole table reads the backlog).
          const beforeControl = await rowsRead(trx, queue.table);
          await sql`select count(*) from ${sql.table(queue.table)}`.execute(trx);
          const control = (await rowsRead(trx, queue.table)) - beforeControl;
          const claim = statements.find((s) => /skip locked/.test(s.sql))!;
          const { rows } = await inDueOrder(trx, () => trx.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (format json) ${claim.sql}`, [...claim.parameters])));
          throw new RolledBack({ plan: JSON.stringify(rows[0]!['QUERY PLAN']), claimed, read, control });
        })
        .then(
          () => expect.fail('the transaction was to be rolled back'),
          (err: unknown) => {
            if (err instanceof RolledBack) return err.seen;
            throw err;
          },
        );
      const kinds = statements.map((s) => (/set_config\('enable_sort'/.test(s.sql) ? 'sorting' : /skip locked/.test(s.sql) ? 'claim' : 'other'));
      expect(kinds.slice(0, 3), 'the claim, between pricing the sort out and back').to.deep.equal(['sorting', 'claim', 'sorting']);
      expect(plan, 'the claim\'s plan').to.include(`"Index Name":"${queue.table}_due_idx"`).and.not.include('"Node Type":"Sort"');
      expect(claimed).to.have.length(TAKE);
      // Each claimed row is read twice (picked, then updated), and rows other tests hold under a lease are
      // passed over; a sort reads all BACKLOG.
      expect(read, 'rows the claim read').to.be.below(BACKLOG / 5);
      expect(control, 'the control: rows a scan of the whole table read').to.be.at.least(BACKLOG);
    });
  }
});

describe('inDueOrder', () => {
  const sorting = async (trx: Tx) => (await sql<{ v: string }>`select current_setting('enable_sort') as v`.execute(trx)).rows[0]!.v;

  it('prices sorting out for the claim alone: the transaction\'s own setting comes back after it', async () => {
    const { database } = await getHarness();
    const seen = await database.asSystem(async (trx) => {
      const during = await inDueOrder(trx, () => sorting(trx));
      const after = await sorting(trx);
      await sql`select set_config('enable_sort', 'off', true)`.execute(trx);
      await inDueOrder(trx, () => sorting(trx));
      return { during, after, afterOff: await sorting(trx) };
    });
    expect(seen).to.deep.equal({ during: 'off', after: 'on', afterOff: 'off' });
  });
});
