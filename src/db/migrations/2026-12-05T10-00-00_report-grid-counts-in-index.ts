// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// A report reads the grid counts of its days (report_daily_grid) and of its cached blocks of days
// (report_block_grid) along their primary keys. Each row's count lived only in the table, so every index
// entry read cost a visit to the row's page, and a day's rows are spread over the table (each is inserted
// when its grid value first occurs that day, among every other tenant's and day's): a large tenant's 29
// past days cost a page visit per row, the most of a first read (issue 44: a summary under 200 ms p99).
// With the count in the index too (INCLUDE), the rows of past days, whose pages vacuum has marked
// all-visible, are read from the index alone, in its order. Updating a count now writes an index entry (it could sometimes stay on its page without one
// before): only the counts of days still being folded change.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `ALTER TABLE report_daily_grid DROP CONSTRAINT report_daily_grid_pkey,
         ADD CONSTRAINT report_daily_grid_pkey PRIMARY KEY (tenant_id, kind, dimension, key, day, business, grid) INCLUDE (n);
       ALTER TABLE report_block_grid DROP CONSTRAINT report_block_grid_pkey,
         ADD CONSTRAINT report_block_grid_pkey PRIMARY KEY (tenant_id, dimension, key, first_day, last_day, kind, business, grid) INCLUDE (n);`,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `ALTER TABLE report_block_grid DROP CONSTRAINT report_block_grid_pkey,
         ADD CONSTRAINT report_block_grid_pkey PRIMARY KEY (tenant_id, dimension, key, first_day, last_day, kind, business, grid);
       ALTER TABLE report_daily_grid DROP CONSTRAINT report_daily_grid_pkey,
         ADD CONSTRAINT report_daily_grid_pkey PRIMARY KEY (tenant_id, kind, dimension, key, day, business, grid);`,
    )
    .execute(db);
}
