// Business hours as a pure computation: whether a schedule is open at an instant and when that next
// changes. Times are wall-clock in the schedule's IANA zone; offsets come from Intl alone, so daylight
// saving follows the platform's time zone data and nothing here knows an offset by heart.

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** `["HH:MM", "HH:MM"]`; an end at or before the start runs past midnight into the next day. */
export type Period = readonly [string, string];

export interface Override {
  /** A calendar date in the schedule's zone, `YYYY-MM-DD`. */
  date: string;
  closed?: boolean;
  periods?: readonly Period[];
}

export interface Schedule {
  time_zone: string;
  weekly: Partial<Record<Weekday, readonly Period[]>>;
  overrides?: readonly Override[];
}

export interface Status {
  open: boolean;
  /** The next instant `open` flips; null when it never does within the horizon. */
  next_change_at: Date | null;
}

// How far ahead a change is looked for: a year and a bit, so a schedule closed for the holidays still
// finds its next opening, and one open around the clock answers null rather than looping.
const HORIZON_DAYS = 400;
const DAY_MS = 86_400_000;

const TIME = /^(?:([01]\d|2[0-3]):([0-5]\d)|(24):(00))$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Minutes after midnight of "HH:MM" ("24:00" is 1440, an end only), or null when malformed. */
export function minutesOf(time: string): number | null {
  const m = TIME.exec(time);
  if (!m) return null;
  return m[3] ? 1440 : Number(m[1]) * 60 + Number(m[2]);
}

/** Days since 1970-01-01 of a real calendar date, or null (`2026-02-30` is not one). */
export function dayNumberOf(date: string): number | null {
  const m = DATE.exec(date);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  return ms / DAY_MS;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The wall clock of an instant in a zone, as if that wall clock were UTC (milliseconds, whole seconds). */
function wallOf(instant: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatterOf(timeZone).formatToParts(new Date(instant))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const year = parts.year!;
  // Intl writes years before 1 differently; schedules never reach them.
  return Date.UTC(year, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
}

/** The zone's offset at an instant, in milliseconds (wall clock minus UTC). */
function offsetAt(instant: number, timeZone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallOf(whole, timeZone) - whole;
}

/**
 * The instant a wall-clock time (as UTC milliseconds) happens in a zone. Where a change of offset makes
 * it happen twice, the earlier; where it skips it, the wall clock read with the offset before the skip,
 * which lands as far after the gap as it was into it (Temporal's `compatible`: 02:30 on the night
 * clocks go from 02:00 to 03:00 is 03:30).
 */
export function instantOf(wall: number, timeZone: string): number {
  const before = offsetAt(wall - DAY_MS, timeZone);
  const after = offsetAt(wall + DAY_MS, timeZone);
  const candidates = [wall - before, wall - after].filter((t) => wallOf(t, timeZone) === wall);
  if (candidates.length > 0) return Math.min(...candidates);
  return wall - before;
}

/** The calendar day (days since 1970-01-01) an instant falls on in a zone. */
export function localDayOf(instant: number, timeZone: string): number {
  return Math.floor(wallOf(Math.floor(instant / 1000) * 1000, timeZone) / DAY_MS);
}

function weekdayOf(day: number): Weekday {
  return WEEKDAYS[new Date(day * DAY_MS).getUTCDay()]!;
}

interface Compiled {
  timeZone: string;
  weekly: Map<Weekday, [number, number][]>;
  overrides: Map<number, [number, number][]>;
}

/** Periods as minute pairs, the end past 1440 when it runs into the next day. Assumes a valid schedule. */
function compilePeriods(periods: readonly Period[] | undefined): [number, number][] {
  return (periods ?? []).map(([s, e]) => {
    const start = minutesOf(s)!;
    const end = minutesOf(e)!;
    return [start, end <= start ? end + 1440 : end];
  });
}

function compile(schedule: Schedule): Compiled {
  const weekly = new Map<Weekday, [number, number][]>();
  for (const day of WEEKDAYS) weekly.set(day, compilePeriods(schedule.weekly[day]));
  const overrides = new Map<number, [number, number][]>();
  for (const o of schedule.overrides ?? []) overrides.set(dayNumberOf(o.date)!, o.closed ? [] : compilePeriods(o.periods));
  return { timeZone: schedule.time_zone, weekly, overrides };
}

/** The open intervals (UTC milliseconds, end exclusive) of the periods that start on a local day, by start. */
function intervalsOfDay(c: Compiled, day: number): [number, number][] {
  const periods = c.overrides.get(day) ?? c.weekly.get(weekdayOf(day))!;
  const midnight = day * DAY_MS;
  const out: [number, number][] = [];
  for (const [s, e] of periods) {
    const start = instantOf(midnight + s * 60_000, c.timeZone);
    const end = instantOf(midnight + e * 60_000, c.timeZone);
    // A period wholly inside a skipped hour never happens.
    if (end > start) out.push([start, end]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/**
 * Whether the schedule is open at `at`, and when that next changes. Each day's periods belong to the day
 * they start on: an override replaces that day's periods, while the previous day's period running past
 * midnight still runs into it.
 */
export function statusAt(schedule: Schedule, at: Date): Status {
  const c = compile(schedule);
  const t = at.getTime();
  // Periods start on their day and last under 48 hours, so nothing that starts before yesterday is open now.
  const first = localDayOf(t, c.timeZone) - 1;
  let current: [number, number] | null = null;
  for (let day = first; day <= first + HORIZON_DAYS; day++) {
    for (const [s, e] of intervalsOfDay(c, day)) {
      if (current && s <= current[1]) {
        current[1] = Math.max(current[1], e);
        continue;
      }
      // `current` is final: nothing later starts before it ends.
      if (current && current[0] <= t && t < current[1]) return { open: true, next_change_at: new Date(current[1]) };
      if (s > t) return { open: false, next_change_at: new Date(s) };
      current = [s, e];
    }
  }
  if (current && current[0] <= t && t < current[1]) return { open: true, next_change_at: null };
  return { open: false, next_change_at: null };
}

/** What is wrong with a schedule, each with the field it is in (JSON pointer segments from the schedule). */
export function problemsOf(schedule: Schedule): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  if (!isTimeZone(schedule.time_zone)) problems.push({ field: 'time_zone', message: 'must be an IANA time zone name' });
  const checkPeriods = (periods: readonly Period[], at: string) => {
    const spans: { s: number; e: number; i: number }[] = [];
    periods.forEach(([start, end], i) => {
      const s = minutesOf(start);
      const e = minutesOf(end);
      if (s === null || s === 1440) problems.push({ field: `${at}/${i}/0`, message: 'must be a time from 00:00 to 23:59' });
      if (e === null) problems.push({ field: `${at}/${i}/1`, message: 'must be a time from 00:00 to 24:00' });
      if (s === null || e === null || s === 1440) return;
      if (s === e) {
        problems.push({ field: `${at}/${i}`, message: 'must not start and end at the same time' });
        return;
      }
      spans.push({ s, e: e <= s ? e + 1440 : e, i });
    });
    spans.sort((a, b) => a.s - b.s);
    for (let k = 1; k < spans.length; k++) {
      if (spans[k]!.s < spans[k - 1]!.e) problems.push({ field: `${at}/${spans[k]!.i}`, message: `overlaps period ${spans[k - 1]!.i} of the same day` });
    }
    // A period that runs past midnight must end before the day's first period starts again (one day's hours cover at most 24).
    const last = spans.at(-1);
    if (last && spans.length > 1 && last.e - 1440 > spans[0]!.s) problems.push({ field: `${at}/${last.i}`, message: `overlaps period ${spans[0]!.i} of the same day` });
  };
  for (const [day, periods] of Object.entries(schedule.weekly)) {
    if (!(WEEKDAYS as readonly string[]).includes(day)) problems.push({ field: `weekly/${day}`, message: 'must be one of sun, mon, tue, wed, thu, fri, sat' });
    else checkPeriods(periods ?? [], `weekly/${day}`);
  }
  const seen = new Map<number, number>();
  (schedule.overrides ?? []).forEach((o, i) => {
    const day = dayNumberOf(o.date);
    if (day === null) problems.push({ field: `overrides/${i}/date`, message: 'must be a calendar date that exists (YYYY-MM-DD)' });
    else if (seen.has(day)) problems.push({ field: `overrides/${i}/date`, message: `repeats the date of override ${seen.get(day)}` });
    else seen.set(day, i);
    if ((o.closed === true) === (o.periods !== undefined)) {
      problems.push({ field: `overrides/${i}`, message: 'must have either closed: true or periods' });
    } else if (o.periods) checkPeriods(o.periods, `overrides/${i}/periods`);
  });
  return problems;
}

/** An IANA zone name Intl knows; offsets such as `+01:00`, which Intl also takes, have no daylight saving and are refused. */
export function isTimeZone(timeZone: string): boolean {
  if (/^[+-]/.test(timeZone)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}
