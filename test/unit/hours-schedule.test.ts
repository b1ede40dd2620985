import { expect } from 'chai';
import fc from 'fast-check';
import { instantOf, type Period, problemsOf, type Schedule, statusAt, WEEKDAYS } from '../../src/hours/schedule.ts';

// Node's Temporal is the oracle: an implementation of zones independent of ours (its types are not in
// TypeScript's lib yet). The module itself uses Intl only.
const Temporal = (globalThis as unknown as { Temporal: any }).Temporal;

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;
const berlin = (weekly: Schedule['weekly'], overrides: Schedule['overrides'] = []): Schedule => ({ time_zone: 'Europe/Berlin', weekly, overrides });
const everyDay = (periods: Period[]) => Object.fromEntries(WEEKDAYS.map((d) => [d, periods])) as Schedule['weekly'];

describe('business hours: the schedule (pure)', () => {
  it('a split day: open in each period, closed at lunch, each answer naming the next change', () => {
    const s = berlin({ mon: [['09:00', '12:30'], ['13:30', '18:00']] });
    // 2026-11-30 is a Monday; Berlin is UTC+1 in winter.
    expect(statusAt(s, at('2026-11-30T07:59:00Z'))).to.deep.equal({ open: false, next_change_at: at('2026-11-30T08:00:00Z') });
    expect(statusAt(s, at('2026-11-30T08:00:00Z'))).to.deep.equal({ open: true, next_change_at: at('2026-11-30T11:30:00Z') });
    expect(statusAt(s, at('2026-11-30T12:00:00Z'))).to.deep.equal({ open: false, next_change_at: at('2026-11-30T12:30:00Z') });
    expect(statusAt(s, at('2026-11-30T16:59:59Z'))).to.deep.equal({ open: true, next_change_at: at('2026-11-30T17:00:00Z') });
    // After Monday's close the next opening is the Monday after.
    expect(iso(statusAt(s, at('2026-11-30T17:00:00Z')).next_change_at)).to.equal('2026-12-07T08:00:00.000Z');
  });

  it('a period across midnight runs into the next day, even when that day is closed by an override', () => {
    const s = berlin({ fri: [['22:00', '02:00']] }, [{ date: '2026-12-05', closed: true }]);
    // Friday 2026-12-04 22:00 Berlin = 21:00Z, until Saturday 01:00Z.
    expect(statusAt(s, at('2026-12-04T20:59:00Z')).open).to.equal(false);
    expect(statusAt(s, at('2026-12-05T00:30:00Z'))).to.deep.equal({ open: true, next_change_at: at('2026-12-05T01:00:00Z') });
    expect(iso(statusAt(s, at('2026-12-05T01:00:00Z')).next_change_at)).to.equal('2026-12-11T21:00:00.000Z');
  });

  it('an override closes a weekday or gives it other hours; an end of 24:00 is midnight', () => {
    const s = berlin({ thu: [['09:00', '17:00']], fri: [['09:00', '17:00']] }, [
      { date: '2026-12-24', closed: true },
      { date: '2026-12-25', periods: [['10:00', '24:00']] },
    ]);
    const closed = statusAt(s, at('2026-12-24T10:00:00Z'));
    expect(closed).to.deep.equal({ open: false, next_change_at: at('2026-12-25T09:00:00Z') });
    expect(statusAt(s, at('2026-12-25T20:00:00Z'))).to.deep.equal({ open: true, next_change_at: at('2026-12-25T23:00:00Z') });
  });

  it('the last Sunday of March in Berlin: 02:00 becomes 03:00, a night shift is an hour shorter', () => {
    const s = berlin({ sat: [['22:00', '06:00']], sun: [['02:30', '04:00']] });
    // Saturday 2026-03-28 22:00 CET = 21:00Z; Sunday 06:00 CEST = 04:00Z.
    expect(statusAt(s, at('2026-03-28T21:00:00Z'))).to.deep.equal({ open: true, next_change_at: at('2026-03-29T04:00:00Z') });
    // 02:30 does not exist that night: it is read as 03:30 CEST (01:30Z), inside the night shift anyway.
    expect(instantOf(Date.UTC(2026, 2, 29, 2, 30), 'Europe/Berlin')).to.equal(Date.parse('2026-03-29T01:30:00Z'));
  });

  it('the last Sunday of October in Berlin: 02:30 happens twice, the period starts at the first', () => {
    const s = berlin({ sun: [['02:30', '03:30']] });
    // 2026-10-25: 02:30 CEST = 00:30Z; 03:30 CET = 02:30Z: two hours open.
    expect(statusAt(s, at('2026-10-25T00:00:00Z'))).to.deep.equal({ open: false, next_change_at: at('2026-10-25T00:30:00Z') });
    expect(statusAt(s, at('2026-10-25T01:45:00Z'))).to.deep.equal({ open: true, next_change_at: at('2026-10-25T02:30:00Z') });
  });

  it('open around the clock never changes; never open never opens', () => {
    expect(statusAt(berlin(everyDay([['00:00', '24:00']])), at('2026-06-01T12:00:00Z'))).to.deep.equal({ open: true, next_change_at: null });
    expect(statusAt(berlin({}), at('2026-06-01T12:00:00Z'))).to.deep.equal({ open: false, next_change_at: null });
  });

  it('names every problem: an unknown zone, an offset zone, 24:30, an empty or overlapping period, a date that does not exist, a repeated date, closed and periods both or neither', () => {
    const problems = problemsOf({
      time_zone: 'Mars/Olympus',
      weekly: { mon: [['09:00', '12:00'], ['11:00', '13:00']], tue: [['24:30', '10:00'], ['10:00', '10:00']], wed: [['20:00', '10:00'], ['08:00', '09:00']] },
      overrides: [{ date: '2026-02-30', closed: true }, { date: '2026-12-24', closed: true }, { date: '2026-12-24', closed: true, periods: [] }, { date: '2026-12-31' }],
    });
    expect(problems.map((p) => p.field)).to.deep.equal([
      'time_zone',
      'weekly/mon/1',
      'weekly/tue/0/0',
      'weekly/tue/1',
      'weekly/wed/0',
      'overrides/0/date',
      'overrides/2/date',
      'overrides/2',
      'overrides/3',
    ]);
    expect(problemsOf({ time_zone: '+01:00', weekly: {} }).map((p) => p.field)).to.deep.equal(['time_zone']);
    expect(problemsOf({ time_zone: 'America/New_York', weekly: { mon: [['22:00', '02:00'], ['02:00', '09:00']] } })).to.deep.equal([]);
  });
});

// Random schedules: each weekday gets up to three periods on a 15-minute grid (a few crossing midnight),
// kept apart so they are valid; overrides on random days in the window.
const ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Santiago', 'UTC'];
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

const periodsArb = fc
  .uniqueArray(fc.integer({ min: 0, max: 95 }), { minLength: 0, maxLength: 6 })
  .map((marks) => {
    const sorted = marks.sort((a, b) => a - b).map((q) => q * 15);
    const out: Period[] = [];
    for (let i = 0; i + 1 < sorted.length; i += 2) out.push([hhmm(sorted[i]!), hhmm(sorted[i + 1]!)]);
    // An odd mark left over becomes a period across midnight, ending before the day's first start.
    if (sorted.length % 2 === 1) {
      const start = sorted.at(-1)!;
      const firstStart = out[0] ? Number(out[0][0].slice(0, 2)) * 60 + Number(out[0][0].slice(3)) : start;
      const end = Math.min(firstStart, 360);
      if (end > 0 && end < start) out.push([hhmm(start), hhmm(end)]);
    }
    return out;
  });

// The window: the year around both of Berlin's changes in 2026 (and the southern zones' too).
const WINDOW_START = Date.parse('2026-01-01T00:00:00Z');
const WINDOW_END = Date.parse('2027-01-01T00:00:00Z');
const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  time_zone: fc.constantFrom(...ZONES),
  weekly: fc.record(Object.fromEntries(WEEKDAYS.map((d) => [d, periodsArb])) as Record<(typeof WEEKDAYS)[number], fc.Arbitrary<Period[]>>),
  overrides: fc
    .uniqueArray(fc.integer({ min: 0, max: 364 }), { maxLength: 8 })
    .chain((days) =>
      fc.tuple(...days.map((d) => fc.oneof(fc.constant({ date: dayString(WINDOW_START + d * 86_400_000), closed: true as const }), periodsArb.map((periods) => ({ date: dayString(WINDOW_START + d * 86_400_000), periods }))))),
    ),
});

// Around a change of offset, more often than chance would: a quarter of the instants sit near Berlin's.
const instantArb = fc.oneof(
  fc.integer({ min: WINDOW_START, max: WINDOW_END }),
  fc.integer({ min: Date.parse('2026-03-28T12:00:00Z'), max: Date.parse('2026-03-30T00:00:00Z') }),
  fc.integer({ min: Date.parse('2026-10-24T12:00:00Z'), max: Date.parse('2026-10-26T00:00:00Z') }),
);

/** Open by the oracle: some period of the day before or of the day itself covers the instant. */
function openByTemporal(s: Schedule, t: number): boolean {
  const zoned = Temporal.Instant.fromEpochMilliseconds(t).toZonedDateTimeISO(s.time_zone);
  const today = zoned.toPlainDate();
  for (const date of [today.subtract({ days: 1 }), today]) {
    const override = s.overrides?.find((o) => o.date === date.toString());
    const periods = override ? (override.closed ? [] : override.periods!) : (s.weekly[WEEKDAYS[date.dayOfWeek % 7]!] ?? []);
    for (const [start, end] of periods) {
      const startAt = date.toPlainDateTime(Temporal.PlainTime.from(start)).toZonedDateTime(s.time_zone, { disambiguation: 'compatible' }).epochMilliseconds;
      const crosses = end <= start;
      const endDate = crosses ? date.add({ days: 1 }) : date;
      const endAt = (end === '24:00' ? endDate.add({ days: 1 }).toPlainDateTime() : endDate.toPlainDateTime(Temporal.PlainTime.from(end)))
        .toZonedDateTime(s.time_zone, { disambiguation: 'compatible' }).epochMilliseconds;
      if (startAt <= t && t < endAt) return true;
    }
  }
  return false;
}

describe('business hours: the schedule (properties)', () => {
  it('random schedules are valid by problemsOf (the generator makes no invalid ones)', () => {
    fc.assert(fc.property(scheduleArb, (s) => {
      expect(problemsOf(s)).to.deep.equal([]);
    }), { numRuns: 300 });
  });

  it('open agrees with an independent reading through Temporal, across DST changes, midnight and overrides', () => {
    fc.assert(fc.property(scheduleArb, instantArb, (s, t) => statusAt(s, new Date(t)).open === openByTemporal(s, t)), { numRuns: 1000 });
  });

  it('next_change_at is the first flip: later than now, the opposite state there, and the same state just before', () => {
    fc.assert(
      fc.property(scheduleArb, instantArb, fc.double({ min: 0, max: 1, noNaN: true }), (s, t, frac) => {
        const now = statusAt(s, new Date(t));
        if (now.next_change_at === null) return;
        const next = now.next_change_at.getTime();
        expect(next).to.be.greaterThan(t);
        expect(openByTemporal(s, next)).to.equal(!now.open);
        expect(openByTemporal(s, next - 1)).to.equal(now.open);
        // Anywhere between now and the change the state holds (a sample, on the minute grid the periods use).
        const between = t + Math.floor(((next - t) * frac) / 60_000) * 60_000;
        expect(openByTemporal(s, between)).to.equal(now.open);
      }),
      { numRuns: 500 },
    );
  });
});
