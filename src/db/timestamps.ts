import pg from 'pg';

const TIMESTAMPTZ_OID = 1184;
const parseAnyTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (value: string) => Date;

/** What PostgreSQL writes for a timestamptz in UTC: `2026-11-26 01:30:17.123456+00`. */
const UTC_TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$/;

/**
 * pg's timestamptz parser (postgres-date), with a fast path for what the service's sessions always get
 * (UTC, four-digit years): the general one tries three patterns and builds the date from its parts, for
 * every timestamp of every row of a list page. The fast path hands the same text, as ISO 8601, to the
 * engine's own parser (faster; the same instant, fraction truncated to the
 * millisecond as postgres-date does: test/unit/timestamps.test.ts). Anything else (other offsets, BC, infinity,
 * years before 1000) goes to postgres-date.
 */
export function parseTimestamptz(value: string): Date {
  if (!UTC_TIMESTAMP.test(value) || value.charCodeAt(0) === 48 /* "0": a year before 1000 */) return parseAnyTimestamptz(value);
  return new Date(`${value.slice(0, 10)}T${value.slice(11, -3)}Z`);
}

export { TIMESTAMPTZ_OID };
