import { CompiledQuery, type SelectQueryBuilder, sql } from 'kysely';
import type { Tx } from './database.ts';
import type { DB } from './schema.ts';

/**
 * One offset page of a query and the total it would return unpaged. The count is the same query with
 * its selection and order removed, so filters (and row-level security) apply to both alike.
 */
export async function offsetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: { limit: number; offset: number },
): Promise<{ rows: O[]; total: number }> {
  const rows = await query.limit(page.limit).offset(page.offset).execute();
  const counted = await query
    .clearSelect()
    .clearOrderBy()
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .executeTakeFirstOrThrow();
  return { rows, total: (counted as { total: number }).total };
}

/** Matches counted exactly; past this, lists report the planner's estimate (an exact count grows with the table). */
export const EXACT_COUNT_LIMIT = 10_000;

/**
 * How many rows the query matches: exact up to EXACT_COUNT_LIMIT (counting stops there, so it costs the
 * same for ten thousand rows as for a million), the planner's estimate beyond.
 *
 * Give the query the list's own order: the count then walks the index the page uses and stops after
 * EXACT_COUNT_LIMIT + 1 entries. Unordered, the planner picks a sequential scan (a tenant is most of the
 * table, so it looks cheap), and concurrent sequential scans synchronise and wander: at a million rows
 * under load, orders of magnitude slower than the index walk.
 */
export async function cappedCount<TB extends keyof DB, O>(
  trx: Tx,
  orderedQuery: SelectQueryBuilder<DB, TB, O>,
): Promise<{ total: number; estimated: boolean }> {
  const matches = orderedQuery.clearSelect().select(sql<number>`1`.as('one'));
  const { n } = await trx
    .selectFrom(matches.limit(EXACT_COUNT_LIMIT + 1).as('capped'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  if (n <= EXACT_COUNT_LIMIT) return { total: n, estimated: false };
  const compiled = matches.clearOrderBy().compile();
  const plan = await trx.executeQuery(CompiledQuery.raw(`explain (format json) ${compiled.sql}`, [...compiled.parameters]));
  const estimate = Number((plan.rows[0] as { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] })['QUERY PLAN'][0].Plan['Plan Rows']);
  return { total: Math.max(EXACT_COUNT_LIMIT + 1, Math.round(estimate)), estimated: true };
}
