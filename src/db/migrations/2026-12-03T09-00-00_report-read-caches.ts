// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// What a report reads of the daily grid grows with the days of its range times the grid values each day
// holds, which for a busy tenant is thousands per kind: a 30-day summary or daily series read them all
// again at every request, for figures of past days that no longer change. Two caches of what past days come
// to, filled by the reads that need them (src/reports/report.repository.ts) and emptied by every change
// of what they were computed from:
// - report_day_ranks: per kind and day, the ranks a daily series' median and p90 are read from;
// - report_blocks and report_block_grid: the grid counts of a block of days (aligned, 4 to 256 days), from
//   which a summary of a long range adds up a few blocks and the days left over at its ends.
// Every change of the grid of a kind, dimension, key and day comes with a change of that day's
// report_daily row in the same transaction (a fold, a label put on or taken off, a rebuild): a trigger on
// report_daily deletes what was cached of that day. Every writer of the rollups holds the tenant's
// rollup lock; a read fills the caches holding it shared, so no fold commits between what a read
// computes and what it stores.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    CREATE TABLE report_day_ranks (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      kind text NOT NULL,
      dimension text NOT NULL,
      key text NOT NULL,
      day date NOT NULL,
      total bigint NOT NULL,
      median_lo bigint,
      median_hi bigint,
      p90_lo bigint,
      p90_hi bigint,
      PRIMARY KEY (tenant_id, kind, dimension, key, day)
    );

    CREATE TABLE report_blocks (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      dimension text NOT NULL,
      key text NOT NULL,
      first_day date NOT NULL,
      last_day date NOT NULL,
      PRIMARY KEY (tenant_id, dimension, key, first_day, last_day)
    );

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
      PRIMARY KEY (tenant_id, dimension, key, first_day, last_day, kind, business, grid),
      FOREIGN KEY (tenant_id, dimension, key, first_day, last_day) REFERENCES report_blocks ON DELETE CASCADE
    );

    DO $do$
    DECLARE
      t text;
    BEGIN
      FOREACH t IN ARRAY ARRAY['report_day_ranks', 'report_blocks', 'report_block_grid'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY %I ON %I TO chat_app USING (tenant_id = current_setting('app.tenant_id', true)) WITH CHECK (tenant_id = current_setting('app.tenant_id', true))$p$, t || '_tenant_isolation', t);
        EXECUTE format('CREATE POLICY %I ON %I TO chat_system USING (true) WITH CHECK (true)', t || '_system', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO chat_app, chat_system', t);
      END LOOP;
    END
    $do$;

    -- A day's rollup row changed: what was cached of that day (its ranks, the blocks holding it) goes.
    -- Blocks are at most 256 days long, which bounds the blocks looked at.
    CREATE FUNCTION report_daily_uncache() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      r report_daily;
    BEGIN
      IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
      DELETE FROM report_day_ranks
        WHERE tenant_id = r.tenant_id AND kind = r.kind AND dimension = r.dimension AND key = r.key AND day = r.day;
      DELETE FROM report_blocks
        WHERE tenant_id = r.tenant_id AND dimension = r.dimension AND key = r.key
          AND first_day BETWEEN r.day - 255 AND r.day AND last_day >= r.day;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER report_daily_uncache AFTER INSERT OR UPDATE OR DELETE ON report_daily
      FOR EACH ROW EXECUTE FUNCTION report_daily_uncache();
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TRIGGER report_daily_uncache ON report_daily;
       DROP FUNCTION report_daily_uncache();
       DROP TABLE report_block_grid;
       DROP TABLE report_blocks;
       DROP TABLE report_day_ranks;`,
    )
    .execute(db);
}
