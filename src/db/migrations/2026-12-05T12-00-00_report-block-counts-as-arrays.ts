// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// A block of days' cached grid counts (migration 2026-12-03T09-00-00) were a row per kind, business and
// grid value: a block of a large tenant holds thousands, and the first read of a 30-day summary, which
// caches its two or three blocks, spent most of its time inserting those rows and their index entries
// (issue 44: a summary under 200 ms p99). A block's counts are only ever read whole, so
// they are now a row per kind and business: the block's grid values in order and their counts, as two
// arrays of the same length. Caching a block writes a few rows; reading one unnests them. What was cached
// goes (it is a cache: the next read fills it again); TRUNCATE, as row-level security does not apply to it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP TABLE report_block_grid;
    TRUNCATE report_blocks;
    CREATE TABLE report_block_grid (
      tenant_id text NOT NULL,
      dimension text NOT NULL,
      key text NOT NULL,
      first_day date NOT NULL,
      last_day date NOT NULL,
      kind text NOT NULL,
      business boolean NOT NULL,
      grids bigint[] NOT NULL,
      counts bigint[] NOT NULL CHECK (cardinality(counts) = cardinality(grids)),
      PRIMARY KEY (tenant_id, dimension, key, first_day, last_day, kind, business),
      FOREIGN KEY (tenant_id, dimension, key, first_day, last_day) REFERENCES report_blocks ON DELETE CASCADE
    );
    ALTER TABLE report_block_grid ENABLE ROW LEVEL SECURITY;
    ALTER TABLE report_block_grid FORCE ROW LEVEL SECURITY;
    CREATE POLICY report_block_grid_tenant_isolation ON report_block_grid TO chat_app
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
    CREATE POLICY report_block_grid_system ON report_block_grid TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON report_block_grid TO chat_app, chat_system;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    DROP TABLE report_block_grid;
    TRUNCATE report_blocks;
    CREATE TABLE report_block_grid (
      tenant_id text NOT NULL,
      dimension text NOT NULL,
      key text NOT NULL,
      first_day date NOT NULL,
      last_day date NOT NULL,
      kind text NOT NULL,
      business boolean NOT NULL,
      grid bigint NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (tenant_id, dimension, key, first_day, last_day, kind, business, grid) INCLUDE (n),
      FOREIGN KEY (tenant_id, dimension, key, first_day, last_day) REFERENCES report_blocks ON DELETE CASCADE
    );
    ALTER TABLE report_block_grid ENABLE ROW LEVEL SECURITY;
    ALTER TABLE report_block_grid FORCE ROW LEVEL SECURITY;
    CREATE POLICY report_block_grid_tenant_isolation ON report_block_grid TO chat_app
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
    CREATE POLICY report_block_grid_system ON report_block_grid TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON report_block_grid TO chat_app, chat_system;
  `,
    )
    .execute(db);
}
