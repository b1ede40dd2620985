import type { SelectQueryBuilder } from 'kysely';

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
