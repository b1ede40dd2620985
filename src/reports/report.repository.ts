import { type RawBuilder, sql } from 'kysely';
import type { Tx } from '../db/database.ts';

// The read side of reports, two ways to the same figures (DESIGN 18):
// - rollups (report_daily, report_daily_grid): per day of the tenant's time zone, per tenant,
//   department, agent or label, folded from the facts waiting for them before a report reads them (and
//   by a job); what a daily report in that zone with at most one filter reads;
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

/** Grid counts from the daily rollups (per day when `perDay`). */
export async function rollupGrid(trx: Tx, filter: RollupFilter, perDay: boolean): Promise<GridCount[]> {
  const bucket = perDay ? sql`to_char(g.day, 'YYYY-MM-DD')` : sql`null::text`;
  const { rows } = await sql<GridCount>`
    select g.kind, ${bucket} as bucket, g.business, g.grid, sum(g.n)::bigint as n
    from report_daily_grid g
    where g.tenant_id = ${filter.tenantId} and g.kind = any(${kinds(DURATION_KINDS)}) and g.dimension = ${filter.dimension} and g.key = ${filter.key}
      and g.day between ${filter.firstDay}::date and ${filter.lastDay}::date
    group by g.kind, 2, g.business, g.grid
    having sum(g.n) > 0
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
