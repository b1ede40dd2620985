import { sql } from 'kysely';

// Ages are measured on the database's clock, the one that stamped the rows (created_at defaults to
// now()), so every instance agrees on what is old whatever its own clock says.

/** now() - ms, as SQL. */
export const dbAgo = (ms: number) => sql<Date>`(now() - make_interval(secs => ${ms / 1000}::double precision))`;

/** now() + ms, as SQL. */
export const dbFromNow = (ms: number) => sql<Date>`(now() + make_interval(secs => ${ms / 1000}::double precision))`;
