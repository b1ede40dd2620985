import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';

// The read side of reports: the facts of a range (index report_facts_range_idx: tenant, kind, time), never
// messages. Row-level security keeps it inside the tenant; the tenant is named too, for the index.

export interface FactFilter {
  tenantId: string;
  start: Date;
  end: Date;
  departmentId?: string | undefined;
  agentId?: string | undefined;
  labelId?: string | undefined;
}

export interface Aggregate {
  kind: string;
  bucket: string | null;
  n: number;
  avg: number | null;
  median: number | null;
  p90: number | null;
  bh_n: number;
  bh_avg: number | null;
  bh_median: number | null;
  bh_p90: number | null;
  value_sum: number;
  satisfied: number;
  le_60: number;
  le_300: number;
  le_900: number;
  le_3600: number;
  le_86400: number;
}

/** Per kind (and per local day or hour in `timeZone`, when grouped): counts, averages, medians, p90s. */
export async function aggregateFacts(trx: Tx, filter: FactFilter, group?: { unit: 'day' | 'hour'; timeZone: string }): Promise<Aggregate[]> {
  const bucket = group ? sql`to_char(f.at at time zone ${group.timeZone}, ${group.unit === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM-DD HH24'})` : sql`null::text`;
  const department = filter.departmentId ? sql`and f.department_id = ${filter.departmentId}::uuid` : sql``;
  const agent = filter.agentId ? sql`and f.agent_id = ${filter.agentId}` : sql``;
  const label = filter.labelId ? sql`and exists (select 1 from conversation_labels cl where cl.conversation_id = f.conversation_id and cl.label_id = ${filter.labelId})` : sql``;
  const { rows } = await sql<Aggregate>`
    select f.kind, ${bucket} as bucket,
      count(*)::int as n, avg(f.seconds)::float8 as avg,
      percentile_cont(0.5) within group (order by f.seconds)::float8 as median,
      percentile_cont(0.9) within group (order by f.seconds)::float8 as p90,
      count(f.bh_seconds)::int as bh_n, avg(f.bh_seconds)::float8 as bh_avg,
      percentile_cont(0.5) within group (order by f.bh_seconds)::float8 as bh_median,
      percentile_cont(0.9) within group (order by f.bh_seconds)::float8 as bh_p90,
      coalesce(sum(f.value), 0)::int as value_sum, count(*) filter (where f.value >= 4)::int as satisfied,
      count(*) filter (where f.seconds <= 60)::int as le_60, count(*) filter (where f.seconds <= 300)::int as le_300,
      count(*) filter (where f.seconds <= 900)::int as le_900, count(*) filter (where f.seconds <= 3600)::int as le_3600,
      count(*) filter (where f.seconds <= 86400)::int as le_86400
    from report_facts f
    where f.tenant_id = ${filter.tenantId} and f.at >= ${filter.start} and f.at < ${filter.end} ${department} ${agent} ${label}
    group by f.kind, 2
  `.execute(trx);
  return rows;
}

export async function tenantTimeZone(trx: Tx, tenantId: string): Promise<string> {
  const row = await trx.selectFrom('tenants').select('timezone').where('id', '=', tenantId).executeTakeFirstOrThrow();
  return row.timezone;
}
