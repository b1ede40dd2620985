import { sql } from 'kysely';

// Ages are measured on the database's clock, the one that stamped the rows (created_at defaults to
// now()), so every instance agrees on what is old whatever its own clock says.

/** now() - ms, as SQL. */
export const dbAgo = (ms: number) => sql<Date>`(now() - make_interval(secs => ${ms / 1000}::double precision))`;

/** now() + ms, as SQL. */
export const dbFromNow = (ms: number) => sql<Date>`(now() + make_interval(secs => ${ms / 1000}::double precision))`;

/**
 * The lowest id of this prefix that newId could make at now() - ms, on the database's clock. Ids are
 * `<prefix>_<UUIDv7>`, whose first 48 bits are the time in milliseconds, in lowercase hex: every id made
 * earlier sorts below it, so old rows are a range of the primary key, with no index of their own.
 */
export const dbIdAgo = (prefix: string, ms: number) =>
  sql<string>`(select ${`${prefix}_`} || substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7000-8000-000000000000'
    from (select lpad(to_hex(floor(extract(epoch from ${dbAgo(ms)}) * 1000)::bigint), 12, '0') as h) as t)`;
