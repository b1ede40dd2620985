import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { dayNumberOf, instantOf, isTimeZone, localDayOf } from '../hours/schedule.ts';
import { invalidInput } from '../shared/errors.ts';
import type { Principal } from '../shared/principal.ts';
import { interpolated, percentileOf } from './grid.ts';
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

/** What one kind's facts (of the range, or of one point) come to, from either path. */
interface KindFigures {
  totals: repo.Totals | undefined;
  grid: repo.GridCount[];
  /** Ranked in SQL (a daily series from the rollups): the grid is not sent. */
  ranked?: repo.DailyPercentiles | undefined;
}

function figuresOf(n: number, msSum: number, grid: repo.GridCount[]): S['ReportDurationFigures'] {
  return {
    count: n,
    average_seconds: n === 0 ? null : round(msSum / n / 1000),
    median_seconds: round(percentileOf(grid, 0.5)),
    p90_seconds: round(percentileOf(grid, 0.9)),
  };
}

function figures(k: KindFigures): S['ReportDurationFigures'] {
  if ('ranked' in k) {
    const r = k.ranked;
    const n = Number(k.totals?.n ?? 0);
    const at = (lo: number, hi: number, p: number) => (r ? round(interpolated(Number(lo), Number(hi), Number(r.total), p)) : null);
    return {
      count: n,
      average_seconds: n === 0 ? null : round(Number(k.totals?.ms_sum ?? 0) / n / 1000),
      median_seconds: r ? at(r.median_lo, r.median_hi, 0.5) : null,
      p90_seconds: r ? at(r.p90_lo, r.p90_hi, 0.9) : null,
    };
  }
  return figuresOf(Number(k.totals?.n ?? 0), Number(k.totals?.ms_sum ?? 0), k.grid.filter((g) => !g.business));
}

function duration(k: KindFigures): S['ReportDuration'] {
  return { ...figures(k), business_hours: figuresOf(Number(k.totals?.bh_n ?? 0), Number(k.totals?.bh_ms_sum ?? 0), k.grid.filter((g) => g.business)) };
}

function buckets(k: KindFigures): S['ReportBucket'][] {
  const all = k.grid.filter((g) => !g.business);
  const atMost = (bound: number) => all.reduce((n, g) => n + (g.grid <= bound ? Number(g.n) : 0), 0);
  const cumulative = [...FIRST_RESPONSE_BUCKETS.map(atMost), Number(k.totals?.n ?? 0)];
  return cumulative.map((c, i) => ({ le_seconds: FIRST_RESPONSE_BUCKETS[i] ?? null, count: c - (i === 0 ? 0 : cumulative[i - 1]!) }));
}

/** Totals and grid counts (or percentiles ranked in SQL) by bucket and kind. */
function index(totals: repo.Totals[], grid: repo.GridCount[], ranked?: repo.DailyPercentiles[]): (bucket: string | null, kind: string) => KindFigures {
  const t = new Map(totals.map((r) => [`${r.bucket}|${r.kind}`, r]));
  const g = new Map<string, repo.GridCount[]>();
  for (const r of grid) {
    const key = `${r.bucket}|${r.kind}`;
    const list = g.get(key) ?? [];
    if (list.length === 0) g.set(key, list);
    list.push({ ...r, grid: Number(r.grid), n: Number(r.n) });
  }
  if (ranked) {
    const p = new Map(ranked.map((r) => [`${r.bucket}|${r.kind}`, r]));
    return (bucket, kind) => ({ totals: t.get(`${bucket}|${kind}`), grid: [], ranked: p.get(`${bucket}|${kind}`) });
  }
  return (bucket, kind) => ({ totals: t.get(`${bucket}|${kind}`), grid: g.get(`${bucket}|${kind}`) ?? [] });
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
    const starts = Array.from({ length: 24 }, (_, hour) => instantOf(day * DAY_MS + hour * HOUR_MS, timeZone));
    for (let hour = 0; hour < 24; hour++) {
      // An hour the clocks skip lands on the next one's instant: it has no point (its next hour has).
      if (hour < 23 && starts[hour]! >= starts[hour + 1]!) continue;
      points.push({ key: `${dayKey(day)} ${pad(hour)}`, start: new Date(starts[hour]!) });
    }
  }
  return points;
}

/** Sizes of the blocks of days whose grid counts are cached, largest first (blocks start at a multiple of their size). */
const BLOCK_SIZES = [256, 128, 64, 32, 16, 8, 4];

/**
 * A range of days as blocks (aligned: a block of N days starts on a day number that is a multiple of N)
 * and the days left between and around them, as runs; blocks only up to `lastBlockDay`, the days after
 * it are all days. Summing a few blocks and a few days reads far fewer grid rows than every day.
 */
export function spansOf(first: number, lastBlockDay: number, last: number): { blocks: [number, number][]; days: [number, number][] } {
  const blocks: [number, number][] = [];
  const days: [number, number][] = [];
  const day = (d: number) => {
    const run = days.at(-1);
    if (run && run[1] === d - 1) run[1] = d;
    else days.push([d, d]);
  };
  const end = Math.min(last, lastBlockDay);
  let p = first;
  while (p <= last) {
    const size = BLOCK_SIZES.find((s) => p % s === 0 && p + s - 1 <= end);
    if (size) {
      blocks.push([p, p + size - 1]);
      p += size;
    } else day(p++);
  }
  return { blocks, days };
}

/**
 * What a block's counts are summed from: its halves (and theirs, down to blocks of the smallest size)
 * where they are cached, its days where not. The block that ends on yesterday is new each day, and the
 * reads of the days before cached most of it in smaller blocks: summed from those, it reads a few blocks
 * and days instead of every day.
 */
export function partsOf(first: number, last: number, cached: ReadonlySet<string>): { blocks: [number, number][]; days: [number, number][] } {
  const blocks: [number, number][] = [];
  const days: [number, number][] = [];
  const visit = (a: number, b: number, whole: boolean) => {
    if (!whole && cached.has(`${dayKey(a)}:${dayKey(b)}`)) blocks.push([a, b]);
    else if (b - a + 1 >= 2 * BLOCK_SIZES.at(-1)!) {
      const half = (b - a + 1) / 2;
      visit(a, a + half - 1, false);
      visit(a + half, b, false);
    } else {
      const run = days.at(-1);
      if (run && run[1] === a - 1) run[1] = b;
      else days.push([a, b]);
    }
  };
  visit(first, last, true);
  return { blocks, days };
}

/** Grid counts of disjoint parts of a range, added up per kind, business and grid value (those above 0, as blockGrid answers them). */
function summedGrid(parts: repo.GridCount[]): repo.GridCount[] {
  const sums = new Map<string, repo.GridCount>();
  for (const g of parts) {
    const key = `${g.kind}|${g.business}|${g.grid}`;
    const sum = sums.get(key);
    if (sum) sum.n = Number(sum.n) + Number(g.n);
    else sums.set(key, { ...g, n: Number(g.n) });
  }
  return [...sums.values()].filter((g) => g.n > 0);
}

/** Which path answers: rollups where they can (the default), or always the facts (to compare them). */
export type ReportRead = 'rollups' | 'facts';

export class ReportService {
  readonly #database: Database;
  readonly #read: ReportRead;

  constructor(database: Database, options: { read?: ReportRead } = {}) {
    this.#database = database;
    this.#read = options.read ?? 'rollups';
  }

  /**
   * Totals and grid counts of the range, in one bucket or per local day or hour. The daily rollups answer
   * a whole range or its days in the tenant's own time zone with at most one of department, agent or
   * label; anything else (hours, another zone, two filters at once) reads the facts.
   */
  async #figures(trx: Tx, principal: Principal, query: ReportQuery, unit: 'day' | 'hour' | undefined) {
    const tenantZone = await repo.tenantTimeZone(trx, principal.tenantId);
    const timeZone = query.time_zone ?? tenantZone;
    const range = rangeOf(query, timeZone);
    const filters = [
      query.department_id === undefined ? undefined : (['department', query.department_id] as const),
      query.agent_id === undefined ? undefined : (['agent', query.agent_id] as const),
      query.label_id === undefined ? undefined : (['label', query.label_id] as const),
    ].filter((f) => f !== undefined);
    if (this.#read === 'rollups' && unit !== 'hour' && timeZone === tenantZone && filters.length <= 1) {
      const [dimension, key] = filters[0] ?? (['tenant', ''] as const);
      const filter = { tenantId: principal.tenantId, firstDay: dayKey(range.first), lastDay: dayKey(range.last), dimension, key };
      // Past days' figures are read from their caches (filled here where missing), today's and later ones
      // from the rollups: a day's facts land on it while it is today, and a cache of it would go at once.
      // Today is the app's clock's (new Date(), as the facts are dated).
      const lastPast = Math.min(range.last, localDayOf(new Date().getTime(), timeZone) - 1);
      if (unit === 'day') {
        // A series shows each day's median and p90 only (no business hours): ranked in SQL.
        const totals = await repo.rollupTotals(trx, filter, true);
        const ranked = await this.#dailyRanks(trx, filter, range.first, lastPast, range.last);
        return { timeZone, range, of: index(totals, [], ranked), path: 'rollups' as const };
      }
      const spans = spansOf(range.first, lastPast, range.last);
      // A read of blocks may cache those it misses: it holds the rollup lock from the start, so that no fold
      // or label change commits between its totals, what it reads and what it caches. (A read of days alone
      // caches nothing and takes no lock.)
      if (spans.blocks.length > 0) await repo.lockRollupsShared(trx, principal.tenantId);
      const totals = await repo.rollupTotals(trx, filter, false);
      const grid = await this.#grid(trx, filter, spans);
      return { timeZone, range, of: index(totals, grid), path: 'rollups' as const };
    }
    const filter = { tenantId: principal.tenantId, start: range.start, end: range.end, departmentId: query.department_id, agentId: query.agent_id, labelId: query.label_id };
    const group = unit ? { unit, timeZone } : undefined;
    const [totals, grid] = [await repo.factTotals(trx, filter, group), await repo.factGrid(trx, filter, group)];
    return { timeZone, range, of: index(totals, grid), path: 'facts' as const };
  }

  /**
   * Grid counts of a range from its blocks' cache (filled where missing) and its other days; with blocks,
   * under the rollup lock (#figures takes it): no fold or label change commits between the read and the
   * caching of what it missed, so the counts the caching answers add to the read's, without reading the
   * range again.
   */
  async #grid(trx: Tx, scope: repo.RollupScope, spans: ReturnType<typeof spansOf>): Promise<repo.GridCount[]> {
    const asSpans = (runs: [number, number][]) => runs.map(([a, b]) => ({ first: dayKey(a), last: dayKey(b) }));
    const wanted = { blocks: asSpans(spans.blocks), days: asSpans(spans.days) };
    const read = await repo.blockGrid(trx, scope, wanted);
    if (read.missing.length === 0) return read.grid;
    const dayOf = (key: string) => Date.parse(`${key}T00:00:00Z`) / DAY_MS;
    const within = { first: read.missing.map((b) => b.first).sort()[0]!, last: read.missing.map((b) => b.last).sort().at(-1)! };
    const cached = await repo.cachedBlocksWithin(trx, scope, within);
    const cachedKeys = new Set(cached.map((b) => `${b.first}:${b.last}`));
    const filled = await repo.cacheBlocks(
      trx,
      scope,
      read.missing.map((block) => {
        const parts = partsOf(dayOf(block.first), dayOf(block.last), cachedKeys);
        return { block, from: { blocks: asSpans(parts.blocks), days: asSpans(parts.days) } };
      }),
    );
    if (filled.cached === read.missing.length) return summedGrid([...read.grid, ...filled.grid]);
    // Another read cached some of them meanwhile: read again, those included (under the lock no fold can take them away).
    const again = await repo.blockGrid(trx, scope, wanted);
    if (again.missing.length > 0) throw new Error(`report blocks missing after they were cached under the rollup lock: ${JSON.stringify(again.missing)}`);
    return again.grid;
  }

  /** The daily ranks of a range: past days' from their cache (filled where missing), the others' from the grid. */
  async #dailyRanks(trx: Tx, filter: repo.RollupFilter, first: number, lastPast: number, last: number): Promise<repo.DailyPercentiles[]> {
    const ranks: repo.DailyPercentiles[] = [];
    if (lastPast >= first) {
      const cached = await repo.cachedDailyPercentiles(trx, { ...filter, lastDay: dayKey(lastPast) });
      const kindsOf = new Map<string, number>();
      for (const r of cached) kindsOf.set(r.bucket, (kindsOf.get(r.bucket) ?? 0) + 1);
      const missing: string[] = [];
      for (let day = first; day <= lastPast; day++) if (kindsOf.get(dayKey(day)) !== repo.DURATION_KINDS.length) missing.push(dayKey(day));
      const incomplete = new Set(missing);
      ranks.push(...cached.filter((r) => !incomplete.has(r.bucket) && Number(r.total) > 0));
      if (missing.length > 0) {
        await repo.lockRollupsShared(trx, filter.tenantId);
        ranks.push(...(await repo.cacheDailyPercentiles(trx, filter, missing)));
      }
    }
    if (lastPast < last) ranks.push(...(await repo.rollupDailyPercentiles(trx, { ...filter, firstDay: dayKey(Math.max(first, lastPast + 1)) })));
    return ranks;
  }

  /**
   * The tenant's facts still waiting for their rollups go into them first, in a transaction of its own
   * (its lock, which orders the tenant's folds, is not held through the read): a report then counts every
   * fact committed before it was asked for.
   */
  async #fold(tenantId: string): Promise<void> {
    if (this.#read === 'rollups') await this.#database.withTenant(tenantId, (trx) => repo.foldPendingFacts(trx, tenantId));
  }

  async summary(principal: Principal, query: ReportQuery): Promise<S['ReportSummary']> {
    await this.#fold(principal.tenantId);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const { timeZone, of: at } = await this.#figures(trx, principal, query, undefined);
      const of = (kind: string) => at(null, kind);
      const count = (kind: string) => Number(of(kind).totals?.n ?? 0);
      const csat = of('csat').totals;
      const responses = Number(csat?.n ?? 0);
      const surveys = count('survey');
      return {
        from: query.from,
        to: query.to,
        time_zone: timeZone,
        department_id: query.department_id ?? null,
        agent_id: query.agent_id ?? null,
        label_id: query.label_id ?? null,
        conversations: count('conversation'),
        reopens: count('reopen'),
        handoffs: count('handoff'),
        first_response: duration(of('first_response')),
        response: duration(of('response')),
        resolution: duration(of('resolution')),
        queue_wait: duration(of('queue_wait')),
        csat: {
          surveys,
          responses,
          response_rate: ratio(responses, surveys),
          score: ratio(Number(csat?.value_sum ?? 0), responses),
          satisfied_share: ratio(Number(csat?.satisfied ?? 0), responses),
        },
        first_response_buckets: buckets(of('first_response')),
      };
    });
  }

  async series(principal: Principal, query: ReportQuery): Promise<S['ReportSeries']> {
    const unit = query.group_by ?? 'day';
    await this.#fold(principal.tenantId);
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const { timeZone, range, of } = await this.#figures(trx, principal, query, unit);
      const points = pointsOf(range.first, range.last, timeZone, unit).map(({ key, start: at }): S['ReportPoint'] => {
        const count = (kind: string) => Number(of(key, kind).totals?.n ?? 0);
        const csat = of(key, 'csat').totals;
        const responses = Number(csat?.n ?? 0);
        return {
          start: at.toISOString(),
          conversations: count('conversation'),
          reopens: count('reopen'),
          handoffs: count('handoff'),
          first_response: figures(of(key, 'first_response')),
          response: figures(of(key, 'response')),
          resolution: figures(of(key, 'resolution')),
          queue_wait: figures(of(key, 'queue_wait')),
          csat: { responses, score: ratio(Number(csat?.value_sum ?? 0), responses) },
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
