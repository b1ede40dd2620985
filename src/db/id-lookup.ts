import { type Expression, type RawBuilder, sql } from 'kysely';

/**
 * `column = any(array(rows))`: the rows a subquery picked (a claim's locking select, a retention batch),
 * looked up one by one through the column's index. Written as `column in (rows)`, the planner may take the
 * subquery for a semi-join and read the whole table (every delivery ever made) to find a thousand rows.
 */
export const idIn = (column: string, rows: Expression<unknown>): RawBuilder<boolean> => sql<boolean>`${sql.ref(column)} = any(array(${rows}))`;
