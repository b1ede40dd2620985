import { expect } from 'chai';
import fc from 'fast-check';
import pg from 'pg';
import { TIMESTAMPTZ_OID, parseTimestamptz } from '../../src/db/timestamps.ts';

const pgParse = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (value: string) => Date | number | null;
const two = (n: number) => String(n).padStart(2, '0');

// Timestamps as PostgreSQL writes them: its UTC sessions' shape mostly, and the others it can write.
const written = fc
  .record({
    year: fc.oneof(fc.integer({ min: 1000, max: 9999 }), fc.integer({ min: 1, max: 999 })),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.stringMatching(/^\d{1,6}$/), { nil: undefined }),
    offset: fc.oneof(fc.constant('+00'), fc.constant('+00'), fc.constantFrom('+05:30', '-03', '+14', '-09:30')),
    bc: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  })
  .map(({ year, month, day, hour, minute, second, fraction, offset, bc }) =>
    `${String(year).padStart(4, '0')}-${two(month)}-${two(day)} ${two(hour)}:${two(minute)}:${two(second)}${fraction ? `.${fraction}` : ''}${offset}${bc ? ' BC' : ''}`,
  );

describe('timestamptz parsing', () => {
  it("gives the same instant as pg's own parser for anything PostgreSQL writes", () => {
    fc.assert(
      fc.property(fc.oneof(written, fc.constantFrom('infinity', '-infinity', '2026-11-26 01:30:17.145+00', '2026-11-26 01:30:17.999999+00')), (text) => {
        const ours = parseTimestamptz(text);
        const theirs = pgParse(text);
        expect(typeof ours).to.equal(typeof theirs);
        expect(ours instanceof Date ? ours.getTime() : ours, text).to.deep.equal(theirs instanceof Date ? theirs.getTime() : theirs);
      }),
      { numRuns: 5000 },
    );
  });
});
