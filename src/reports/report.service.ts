import type { components } from '../../generated/api.ts';
import type { Database } from '../db/database.ts';
import { dayNumberOf, instantOf, isTimeZone } from '../hours/schedule.ts';
import { invalidInput } from '../shared/errors.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './report.repository.ts';

type S = components['schemas'];

export const MAX_RANGE_DAYS = 400;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Upper bounds of the first-response buckets, in seconds; the last bucket has none. */
export const FIRST_RESPONSE_BUCKETS = [60, 300, 900, 3600, 86400] as const;

export interface ReportQuery {
  from: string;
  to: string;
  time_zone?: string;
  department_id?: string;
  agent_id?: string;
  label_id?: string;
  group_by?: 'day' | 'hour';
}

/** Figures as answered: three decimals. */
const round = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);
const ratio = (a: number, b: number) => (b === 0 ? null : round(a / b));

function figures(a: repo.Aggregate | undefined): S['ReportDurationFigures'] {
  return { count: a?.n ?? 0, average_seconds: round(a?.avg ?? null), median_seconds: round(a?.median ?? null), p90_seconds: round(a?.p90 ?? null) };
}

function duration(a: repo.Aggregate | undefined): S['ReportDuration'] {
  return {
    ...figures(a),
    business_hours: { count: a?.bh_n ?? 0, average_seconds: round(a?.bh_avg ?? null), median_seconds: round(a?.bh_median ?? null), p90_seconds: round(a?.bh_p90 ?? null) },
  };
}

function buckets(a: repo.Aggregate | undefined): S['ReportBucket'][] {
  const cumulative = [a?.le_60 ?? 0, a?.le_300 ?? 0, a?.le_900 ?? 0, a?.le_3600 ?? 0, a?.le_86400 ?? 0, a?.n ?? 0];
  return cumulative.map((c, i) => ({ le_seconds: FIRST_RESPONSE_BUCKETS[i] ?? null, count: c - (i === 0 ? 0 : cumulative[i - 1]!) }));
}

/** The range as instants, checked: 400 naming the parameter at fault. */
export function rangeOf(query: Pick<ReportQuery, 'from' | 'to'>, timeZone: string) {
  if (!isTimeZone(timeZone)) throw invalidInput({ field: 'time_zone', message: 'must be an IANA time zone name' });
  const first = dayNumberOf(query.from);
  if (first === null) throw invalidInput({ field: 'from', message: 'must be a calendar date that exists (YYYY-MM-DD)' });
  const last = dayNumberOf(query.to);
  if (last === null) throw invalidInput({ field: 'to', message: 'must be a calendar date that exists (YYYY-MM-DD)' });
  if (last < first) throw invalidInput({ field: 'to', message: 'must not be before from' });
  if (last - first + 1 > MAX_RANGE_DAYS) throw invalidInput({ field: 'to', message: `must be at most ${MAX_RANGE_DAYS} days after from (both included)` });
  return { first, last, start: new Date(instantOf(first * DAY_MS, timeZone)), end: new Date(instantOf((last + 1) * DAY_MS, timeZone)) };
}

const pad = (n: number) => String(n).padStart(2, '0');
const dayKey = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The points of the range: each local day, or each local hour (an hour skipped by daylight saving has none). */
export function pointsOf(first: number, last: number, timeZone: string, unit: 'day' | 'hour'): { key: string; start: Date }[] {
  const points: { key: string; start: Date }[] = [];
  for (let day = first; day <= last; day++) {
    if (unit === 'day') {
      points.push({ key: dayKey(day), start: new Date(instantOf(day * DAY_MS, timeZone)) });
      continue;
    }
    for (let hour = 0; hour < 24; hour++) {
      const start = instantOf(day * DAY_MS + hour * HOUR_MS, timeZone);
      // A skipped wall-clock hour lands in the next one: one point for it.
      if (points.length > 0 && points.at(-1)!.start.getTime() >= start) continue;
      points.push({ key: `${dayKey(day)} ${pad(hour)}`, start: new Date(start) });
    }
  }
  return points;
}

export class ReportService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async summary(principal: Principal, query: ReportQuery): Promise<S['ReportSummary']> {
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const timeZone = query.time_zone ?? (await repo.tenantTimeZone(trx, principal.tenantId));
      const { start, end } = rangeOf(query, timeZone);
      const rows = await repo.aggregateFacts(trx, { tenantId: principal.tenantId, start, end, departmentId: query.department_id, agentId: query.agent_id, labelId: query.label_id });
      const of = (kind: string) => rows.find((r) => r.kind === kind);
      const csat = of('csat');
      const surveys = of('survey')?.n ?? 0;
      return {
        from: query.from,
        to: query.to,
        time_zone: timeZone,
        department_id: query.department_id ?? null,
        agent_id: query.agent_id ?? null,
        label_id: query.label_id ?? null,
        conversations: of('conversation')?.n ?? 0,
        reopens: of('reopen')?.n ?? 0,
        handoffs: of('handoff')?.n ?? 0,
        first_response: duration(of('first_response')),
        response: duration(of('response')),
        resolution: duration(of('resolution')),
        queue_wait: duration(of('queue_wait')),
        csat: {
          surveys,
          responses: csat?.n ?? 0,
          response_rate: ratio(csat?.n ?? 0, surveys),
          score: ratio(csat?.value_sum ?? 0, csat?.n ?? 0),
          satisfied_share: ratio(csat?.satisfied ?? 0, csat?.n ?? 0),
        },
        first_response_buckets: buckets(of('first_response')),
      };
    });
  }

  async series(principal: Principal, query: ReportQuery): Promise<S['ReportSeries']> {
    const unit = query.group_by ?? 'day';
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const timeZone = query.time_zone ?? (await repo.tenantTimeZone(trx, principal.tenantId));
      const { first, last, start, end } = rangeOf(query, timeZone);
      const rows = await repo.aggregateFacts(
        trx,
        { tenantId: principal.tenantId, start, end, departmentId: query.department_id, agentId: query.agent_id, labelId: query.label_id },
        { unit, timeZone },
      );
      const byKey = new Map<string, repo.Aggregate>();
      for (const r of rows) byKey.set(`${r.bucket}|${r.kind}`, r);
      const points = pointsOf(first, last, timeZone, unit).map(({ key, start: at }): S['ReportPoint'] => {
        const of = (kind: string) => byKey.get(`${key}|${kind}`);
        const csat = of('csat');
        return {
          start: at.toISOString(),
          conversations: of('conversation')?.n ?? 0,
          reopens: of('reopen')?.n ?? 0,
          handoffs: of('handoff')?.n ?? 0,
          first_response: figures(of('first_response')),
          response: figures(of('response')),
          resolution: figures(of('resolution')),
          queue_wait: figures(of('queue_wait')),
          csat: { responses: csat?.n ?? 0, score: ratio(csat?.value_sum ?? 0, csat?.n ?? 0) },
        };
      });
      return { from: query.from, to: query.to, time_zone: timeZone, group_by: unit, points };
    });
  }
}

// ---- CSV ---------------------------------------------------------------------------------------------

const cell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};
const csv = (rows: unknown[][]) => rows.map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';

export function summaryCsv(s: S['ReportSummary']): string {
  const rows: unknown[][] = [['metric', 'count', 'average_seconds', 'median_seconds', 'p90_seconds', 'bh_count', 'bh_average_seconds', 'bh_median_seconds', 'bh_p90_seconds']];
  for (const name of ['first_response', 'response', 'resolution', 'queue_wait'] as const) {
    const d = s[name];
    rows.push([name, d.count, d.average_seconds, d.median_seconds, d.p90_seconds, d.business_hours.count, d.business_hours.average_seconds, d.business_hours.median_seconds, d.business_hours.p90_seconds]);
  }
  rows.push(['conversations', s.conversations], ['reopens', s.reopens], ['handoffs', s.handoffs]);
  rows.push(['csat_surveys', s.csat.surveys], ['csat_responses', s.csat.responses], ['csat_response_rate', s.csat.response_rate], ['csat_score', s.csat.score], ['csat_satisfied_share', s.csat.satisfied_share]);
  for (const b of s.first_response_buckets) rows.push([`first_response_le_${b.le_seconds ?? 'inf'}`, b.count]);
  return csv(rows);
}

export function seriesCsv(s: S['ReportSeries']): string {
  const durations = ['first_response', 'response', 'resolution', 'queue_wait'] as const;
  const header = ['start', 'conversations', 'reopens', 'handoffs', ...durations.flatMap((d) => [`${d}_count`, `${d}_average_seconds`, `${d}_median_seconds`, `${d}_p90_seconds`]), 'csat_responses', 'csat_score'];
  const rows = s.points.map((p) => [
    p.start,
    p.conversations,
    p.reopens,
    p.handoffs,
    ...durations.flatMap((d) => [p[d].count, p[d].average_seconds, p[d].median_seconds, p[d].p90_seconds]),
    p.csat.responses,
    p.csat.score,
  ]);
  return csv([header, ...rows]);
}
