import { type RawBuilder, sql } from 'kysely';
import type { Tx } from '../db/database.ts';

// The read side of reports, two ways to the same figures (DESIGN 18):
// - rollups (report_daily, report_daily_grid): per day of the tenant's time zone, per tenant,
//   department, agent or label, folded from the facts waiting for them before a report reads them (and
//   by a job); what a daily report in that zone with at most one filter reads; past days' grid counts
//   through two caches (migration 2026-12-03T09-00-00): blocks of days for a summary, ranks per day for
//   a daily series;
// - facts (report_facts, index on tenant, kind, time): any other zone, hours, several filters at once;
//   the kinds are named so that the index's time range applies under each (else it reads them all).
// Both answer the same shapes: totals per kind (and bucket) and counts per grid value (src/reports/grid.ts).
// Row-level security keeps them inside the tenant; the tenant is named too, for the indexes.

export interface FactFilter {
  tenantId: string;
  start: Date;
  end: Date;
  departmentId?: string | undefined;
  agentId?: string | undefined;
  labelId?: string | undefined;
}

/** Per kind (and bucket): how many facts, their durations' sums in whole milliseconds, ratings. */
export interface Totals {
  kind: string;
  bucket: string | null;
  n: number;
  ms_sum: number;
  bh_n: number;
  bh_ms_sum: number;
  value_sum: number;
  satisfied: number;
}

/** Per kind (and bucket): how many durations fell on each grid value (business: those within hours). */
export interface GridCount {
  kind: string;
  bucket: string | null;
  business: boolean;
  grid: number;
  n: number;
}

/** The kinds that have durations, and all kinds. */
export const DURATION_KINDS = ['first_response', 'response', 'resolution', 'queue_wait'] as const;
export const KINDS = ['conversation', 'reopen', 'handoff', 'survey', 'csat', ...DURATION_KINDS] as const;

const kinds = (list: readonly string[]) => sql`array[${sql.join(list.map((k) => sql`${k}`))}]::text[]`;

function factWhere(filter: FactFilter): RawBuilder<unknown> {
  const department = filter.departmentId ? sql`and f.department_id = ${filter.departmentId}::uuid` : sql``;
  const agent = filter.agentId ? sql`and f.agent_id = ${filter.agentId}` : sql``;
  const label = filter.labelId ? sql`and exists (select 1 from conversation_labels cl where cl.conversation_id = f.conversation_id and cl.label_id = ${filter.labelId})` : sql``;
  return sql`f.tenant_id = ${filter.tenantId} and f.at >= ${filter.start} and f.at < ${filter.end} ${department} ${agent} ${label}`;
}

function factBucket(group: { unit: 'day' | 'hour'; timeZone: string } | undefined): RawBuilder<string | null> {
  return group ? sql<string>`to_char(f.at at time zone ${group.timeZone}, ${group.unit === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM-DD HH24'})` : sql<null>`null::text`;
}

/** Totals from the facts of a range (per local day or hour in `timeZone`, when grouped). */
export async function factTotals(trx: Tx, filter: FactFilter, group?: { unit: 'day' | 'hour'; timeZone: string }): Promise<Totals[]> {
  const { rows } = await sql<Totals>`
    select f.kind, ${factBucket(group)} as bucket, count(*)::int as n,
      coalesce(sum(round(f.seconds * 1000)::bigint), 0)::bigint as ms_sum,
      count(f.bh_seconds)::int as bh_n, coalesce(sum(round(f.bh_seconds * 1000)::bigint), 0)::bigint as bh_ms_sum,
      coalesce(sum(f.value), 0)::bigint as value_sum, count(*) filter (where f.value >= 4)::int as satisfied
    from report_facts f
    where f.kind = any(${kinds(KINDS)}) and ${factWhere(filter)}
    group by f.kind, 2
  `.execute(trx);
  return rows;
}

/** Grid counts from the facts of a range. */
export async function factGrid(trx: Tx, filter: FactFilter, group?: { unit: 'day' | 'hour'; timeZone: string }): Promise<GridCount[]> {
  const { rows } = await sql<GridCount>`
    select f.kind, ${factBucket(group)} as bucket, b.business, b.grid, count(*)::int as n
    from report_facts f
    cross join lateral (values (false, report_grid(f.seconds)), (true, report_grid(f.bh_seconds))) as b (business, grid)
    where f.kind = any(${kinds(DURATION_KINDS)}) and ${factWhere(filter)} and b.grid is not null
    group by f.kind, 2, b.business, b.grid
  `.execute(trx);
  return rows;
}

export interface RollupFilter {
  tenantId: string;
  /** Local days, both included (YYYY-MM-DD). */
  firstDay: string;
  lastDay: string;
  dimension: 'tenant' | 'department' | 'agent' | 'label';
  key: string;
}

/** Totals from the daily rollups (per day when `perDay`). */
export async function rollupTotals(trx: Tx, filter: RollupFilter, perDay: boolean): Promise<Totals[]> {
  const bucket = perDay ? sql`to_char(r.day, 'YYYY-MM-DD')` : sql`null::text`;
  const { rows } = await sql<Totals>`
    select r.kind, ${bucket} as bucket, sum(r.n)::bigint as n, sum(r.ms_sum)::bigint as ms_sum, sum(r.bh_n)::bigint as bh_n,
      sum(r.bh_ms_sum)::bigint as bh_ms_sum, sum(r.value_sum)::bigint as value_sum, sum(r.satisfied)::bigint as satisfied
    from report_daily r
    where r.tenant_id = ${filter.tenantId} and r.kind = any(${kinds(KINDS)}) and r.dimension = ${filter.dimension} and r.key = ${filter.key}
      and r.day between ${filter.firstDay}::date and ${filter.lastDay}::date
    group by r.kind, 2
  `.execute(trx);
  return rows;
}

/** Per kind and day: the count on the grid and the grid values at the ranks a median and a p90 interpolate between. */
export interface DailyPercentiles {
  kind: string;
  bucket: string;
  total: number;
  median_lo: number;
  median_hi: number;
  p90_lo: number;
  p90_hi: number;
}

/**
 * The daily series' medians and p90s (durations, not business hours) from the daily grid, per kind and
 * day, without sending the grid: per day it holds hundreds of values per kind, and a 30-day series would
 * carry a hundred thousand rows to be ranked in the app. The ranks are percentileOf's (src/reports/grid.ts):
 * the value at rank r is the first whose running count passes r; the app interpolates between them.
 */
export async function rollupDailyPercentiles(trx: Tx, filter: RollupFilter): Promise<DailyPercentiles[]> {
  // Per kind, so that each reads the primary key in its order (day, then grid: business is fixed) and
  // ranks without sorting; a row per grid value and day (its key is unique): no grouping first.
  const { rows } = await sql<DailyPercentiles>`
    select k.kind, p.bucket, p.total, p.median_lo, p.median_hi, p.p90_lo, p.p90_hi
    from unnest(${kinds(DURATION_KINDS)}) as k (kind)
    cross join lateral (
      select to_char(c.day, 'YYYY-MM-DD') as bucket, max(c.total)::bigint as total,
        min(c.grid) filter (where c.upto > floor(0.5::float8 * (c.total - 1)))::bigint as median_lo,
        min(c.grid) filter (where c.upto > ceil(0.5::float8 * (c.total - 1)))::bigint as median_hi,
        min(c.grid) filter (where c.upto > floor(0.9::float8 * (c.total - 1)))::bigint as p90_lo,
        min(c.grid) filter (where c.upto > ceil(0.9::float8 * (c.total - 1)))::bigint as p90_hi
      from (
        select g.day, g.grid, sum(g.n) over (partition by g.day order by g.grid) as upto, sum(g.n) over (partition by g.day) as total
        from report_daily_grid g
        where g.tenant_id = ${filter.tenantId} and g.kind = k.kind and g.dimension = ${filter.dimension} and g.key = ${filter.key}
          and g.day between ${filter.firstDay}::date and ${filter.lastDay}::date and not g.business and g.n > 0
      ) as c
      group by c.day
    ) as p
  `.execute(trx);
  return rows;
}

/** A tenant's rollups of one dimension and key (the tenant's own: dimension 'tenant', key ''). */
export type RollupScope = Pick<RollupFilter, 'tenantId' | 'dimension' | 'key'>;

/** Local days, both included (YYYY-MM-DD). */
export interface Span {
  first: string;
  last: string;
}

const spanValues = (spans: Span[]) => sql.join(spans.map((s) => sql`(${s.first}::date, ${s.last}::date)`));

/**
 * The rollups' lock of the tenant, shared (migration 2026-12-03T09-00-00): every writer of the rollups
 * holds it exclusively, so what is computed and cached after it is taken is what the rollups hold at commit.
 */
export async function lockRollupsShared(trx: Tx, tenantId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock_shared(1919251556, hashtext(${tenantId}) & 2147483647)`.execute(trx);
}

/** The daily grid's rows of the duration kinds on the days of a span (each span its own index range). */
const dailyGridOf = (scope: RollupScope, span: Span) => sql`
  select g.kind, g.business, g.grid, g.n
  from report_daily_grid g
  where g.tenant_id = ${scope.tenantId} and g.kind = any(${kinds(DURATION_KINDS)}) and g.dimension = ${scope.dimension} and g.key = ${scope.key}
    and g.day between ${span.first}::date and ${span.last}::date`;

/** A cached block's grid counts, a row per grid value (stored per kind and business, as arrays in grid order). */
const blockCountsOf = (scope: RollupScope, b: Span) => sql`
  select bg.kind, bg.business, u.grid, u.n
  from report_block_grid bg cross join unnest(bg.grids, bg.counts) as u (grid, n)
  where bg.tenant_id = ${scope.tenantId} and bg.dimension = ${scope.dimension} and bg.key = ${scope.key}
    and bg.first_day = ${b.first}::date and bg.last_day = ${b.last}::date`;

/** The blocks of a scope whose grid counts are cached, within a span of days. */
export async function cachedBlocksWithin(trx: Tx, scope: RollupScope, within: Span): Promise<Span[]> {
  const { rows } = await sql<Span>`
    select to_char(rb.first_day, 'YYYY-MM-DD') as first, to_char(rb.last_day, 'YYYY-MM-DD') as last
    from report_blocks rb
    where rb.tenant_id = ${scope.tenantId} and rb.dimension = ${scope.dimension} and rb.key = ${scope.key}
      and rb.first_day >= ${within.first}::date and rb.last_day <= ${within.last}::date
  `.execute(trx);
  return rows;
}

/** A block of days to cache, and what its counts are summed from: cached blocks within it, and its other days. */
export interface BlockToCache {
  block: Span;
  from: { blocks: Span[]; days: Span[] };
}

/**
 * Caches the grid counts of these blocks of days (under lockRollupsShared, which keeps the cached blocks
 * they are summed from in place), and answers the counts it cached, summed over the blocks (per kind,
 * business and grid value), and how many of the blocks it cached. A block another read cached meanwhile
 * is left as it is (both counted the same rollups) and is not in the counts answered.
 */
export async function cacheBlocks(trx: Tx, scope: RollupScope, blocks: BlockToCache[]): Promise<{ grid: GridCount[]; cached: number }> {
  if (blocks.length === 0) return { grid: [], cached: 0 };
  // Each part is an index lookup or range of its own: joined to a list of blocks, the planner read every
  // day of the key instead. A block's counts are stored per kind and business, its grid values in order.
  const counts = blocks.map(
    ({ block, from }) => sql`select ${block.first}::date as first_day, ${block.last}::date as last_day, s.kind, s.business,
        array_agg(s.grid order by s.grid) as grids, array_agg(s.n order by s.grid) as counts
      from (
        select d.kind, d.business, d.grid, sum(d.n)::bigint as n
        from (${sql.join([...from.blocks.map((b) => blockCountsOf(scope, b)), ...from.days.map((d) => dailyGridOf(scope, d))], sql` union all `)}) as d
        group by d.kind, d.business, d.grid having sum(d.n) <> 0
      ) as s
      group by s.kind, s.business`,
  );
  const { rows } = await sql<GridCount & { marks: number | null }>`
    with marks as (
      insert into report_blocks (tenant_id, dimension, key, first_day, last_day)
      select ${scope.tenantId}, ${scope.dimension}, ${scope.key}, w.first_day, w.last_day
      from (values ${spanValues(blocks.map((b) => b.block))}) as w (first_day, last_day)
      on conflict do nothing
      returning first_day, last_day
    ),
    cached as (
      insert into report_block_grid (tenant_id, dimension, key, first_day, last_day, kind, business, grids, counts)
      select ${scope.tenantId}, ${scope.dimension}, ${scope.key}, c.first_day, c.last_day, c.kind, c.business, c.grids, c.counts
      from (${sql.join(counts, sql` union all `)}) as c
      join marks m on m.first_day = c.first_day and m.last_day = c.last_day
      returning kind, business, grids, counts
    )
    select c.kind, null::text as bucket, c.business, u.grid, sum(u.n)::bigint as n, null::int as marks
    from cached c cross join unnest(c.grids, c.counts) as u (grid, n) group by c.kind, c.business, u.grid
    union all select null, null, null, null, null, count(*)::int from marks
  `.execute(trx);
  return {
    grid: rows.filter((r) => r.marks === null).map(({ marks: _m, ...g }) => g),
    cached: Number(rows.find((r) => r.marks !== null)?.marks ?? 0),
  };
}

/**
 * Grid counts of a range made of blocks of days, read from their cache, and of days read from the daily
 * grid; and which of the blocks are not cached (their counts are then missing from the answer). One
 * statement, so that a block's mark and its counts are read from one snapshot: a fold deletes both. Each
 * block and each run of days is an index lookup or range of its own.
 */
export async function blockGrid(trx: Tx, scope: RollupScope, spans: { blocks: Span[]; days: Span[] }): Promise<{ grid: GridCount[]; missing: Span[] }> {
  if (spans.blocks.length === 0 && spans.days.length === 0) return { grid: [], missing: [] };
  const marked = (b: Span) => sql`exists (
    select 1 from report_blocks rb
    where rb.tenant_id = ${scope.tenantId} and rb.dimension = ${scope.dimension} and rb.key = ${scope.key}
      and rb.first_day = ${b.first}::date and rb.last_day = ${b.last}::date)`;
  const parts = [
    ...spans.blocks.map((b) => sql`${blockCountsOf(scope, b)} and ${marked(b)}`),
    ...spans.days.map((d) => dailyGridOf(scope, d)),
  ];
  const missing = spans.blocks.map(
    (b) => sql`select ${b.first}::text as first, ${b.last}::text as last where not ${marked(b)}`,
  );
  const { rows } = await sql<GridCount & { missing_first: string | null; missing_last: string | null }>`
    select x.kind, null::text as bucket, x.business, x.grid, sum(x.n)::bigint as n, null::text as missing_first, null::text as missing_last
    from (${sql.join(parts, sql` union all `)}) as x
    group by x.kind, x.business, x.grid
    having sum(x.n) > 0
    ${missing.length === 0 ? sql`` : sql`union all select null, null, null, null, null, m.first, m.last from (${sql.join(missing, sql` union all `)}) as m`}
  `.execute(trx);
  return {
    grid: rows.filter((r) => r.missing_first === null).map(({ missing_first: _f, missing_last: _l, ...g }) => g),
    missing: rows.filter((r) => r.missing_first !== null).map((r) => ({ first: r.missing_first!, last: r.missing_last! })),
  };
}

/** The cached ranks of the days of a range, per kind (days with no duration of a kind answer total 0). */
export async function cachedDailyPercentiles(trx: Tx, filter: RollupFilter): Promise<DailyPercentiles[]> {
  const { rows } = await sql<DailyPercentiles>`
    select r.kind, to_char(r.day, 'YYYY-MM-DD') as bucket, r.total, r.median_lo, r.median_hi, r.p90_lo, r.p90_hi
    from report_day_ranks r
    where r.tenant_id = ${filter.tenantId} and r.kind = any(${kinds(DURATION_KINDS)}) and r.dimension = ${filter.dimension} and r.key = ${filter.key}
      and r.day between ${filter.firstDay}::date and ${filter.lastDay}::date
  `.execute(trx);
  return rows;
}

/**
 * Caches the ranks of these days, every duration kind, from the daily grid (under lockRollupsShared): a
 * day with no duration of a kind is cached as total 0. A day another read cached meanwhile is left.
 * Answers the ranks it computed (none for a kind with no duration that day).
 */
export async function cacheDailyPercentiles(trx: Tx, scope: RollupScope, days: string[]): Promise<DailyPercentiles[]> {
  if (days.length === 0) return [];
  const sorted = [...days].sort();
  const ranked = await rollupDailyPercentiles(trx, { ...scope, firstDay: sorted[0]!, lastDay: sorted.at(-1)! });
  const at = new Map(ranked.map((r) => [`${r.bucket}|${r.kind}`, r]));
  const rows = sorted.flatMap((day) =>
    DURATION_KINDS.map((kind) => {
      const r = at.get(`${day}|${kind}`);
      return sql`(${day}::date, ${kind}::text, ${r?.total ?? 0}::bigint, ${r?.median_lo ?? null}::bigint, ${r?.median_hi ?? null}::bigint, ${r?.p90_lo ?? null}::bigint, ${r?.p90_hi ?? null}::bigint)`;
    }),
  );
  await sql`
    insert into report_day_ranks (tenant_id, kind, dimension, key, day, total, median_lo, median_hi, p90_lo, p90_hi)
    select ${scope.tenantId}, v.kind, ${scope.dimension}, ${scope.key}, v.day, v.total, v.median_lo, v.median_hi, v.p90_lo, v.p90_hi
    from (values ${sql.join(rows)}) as v (day, kind, total, median_lo, median_hi, p90_lo, p90_hi)
    on conflict do nothing
  `.execute(trx);
  const wanted = new Set(days);
  return ranked.filter((r) => wanted.has(r.bucket));
}

export async function tenantTimeZone(trx: Tx, tenantId: string): Promise<string> {
  const row = await trx.selectFrom('tenants').select('timezone').where('id', '=', tenantId).executeTakeFirstOrThrow();
  return row.timezone;
}

/**
 * Folds the tenant's facts that wait for their rollups into them (migration 2026-12-02T09-00-00): one
 * statement for all of them, after the folds of the tenant in flight. Answers how many it folded.
 */
export async function foldPendingFacts(trx: Tx, tenantId: string): Promise<number> {
  const { rows } = await sql<{ folded: string }>`select report_rollup_fold(${tenantId}) as folded`.execute(trx);
  return Number(rows[0]!.folded);
}

/** The tenants with facts waiting to be folded, at most `limit`. */
export async function tenantsWithPendingFacts(trx: Tx, limit: number): Promise<string[]> {
  const rows = await trx.selectFrom('report_facts_pending').select('tenant_id').distinct().limit(limit).execute();
  return rows.map((r) => r.tenant_id);
}
