// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// DESIGN 18: reports read per-day rollups, kept in the writing transaction, for the tenant, each
// department, each agent and each label. What the first rollups lacked to answer a report alone:
// - sums that do not depend on the order of addition (durations are whole milliseconds: bigint sums);
// - the share of satisfied ratings;
// - medians and p90s: a per-day count of durations on a fixed grid (whole seconds below 1,000 s, then
//   three significant digits, always rounded up), from which any percentile of the range is read;
// - labels: a conversation's facts count for the labels it carries now (as the facts' own filter does),
//   moved in and out as labels are put on and taken off;
// - the day in the tenant's time zone as it is now: changing the zone rebuilds the tenant's rollups.
// The queue's wait ends at the assignment as the app's clock dates it (updated_at of the assigning
// update), like every other fact, rather than at the database's now().
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- The grid a duration is counted on: whole seconds (rounded up) below 1,000, above it rounded up to
    -- three significant digits (under 1% high). Rounding up keeps "at most 60 s" exact for whole bounds.
    CREATE FUNCTION report_grid(s double precision) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT CASE WHEN c < 1000 THEN c ELSE ((c + d - 1) / d) * d END
      FROM (SELECT c, power(10, length(c::text) - 3)::bigint AS d FROM (SELECT ceil(s)::bigint AS c) AS x) AS y
    $fn$;

    ALTER TABLE report_daily ADD COLUMN ms_sum bigint NOT NULL DEFAULT 0;
    ALTER TABLE report_daily ADD COLUMN bh_ms_sum bigint NOT NULL DEFAULT 0;
    ALTER TABLE report_daily ADD COLUMN satisfied bigint NOT NULL DEFAULT 0;

    -- How many durations of a kind fell on each grid value that day (business: the business-hours ones).
    CREATE TABLE report_daily_grid (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      kind text NOT NULL,
      dimension text NOT NULL,
      key text NOT NULL,
      day date NOT NULL,
      business boolean NOT NULL,
      grid bigint NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (tenant_id, kind, dimension, key, day, business, grid)
    );
    ALTER TABLE report_daily_grid ENABLE ROW LEVEL SECURITY;
    ALTER TABLE report_daily_grid FORCE ROW LEVEL SECURITY;
    CREATE POLICY report_daily_grid_tenant_isolation ON report_daily_grid TO chat_app
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
    CREATE POLICY report_daily_grid_system ON report_daily_grid TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON report_daily_grid TO chat_app, chat_system;

    -- Adds (sign 1) or takes away (sign -1) one fact in the rollups: of its tenant, department, agent and
    -- the labels its conversation carries, or of one label alone (only_label).
    CREATE FUNCTION report_rollup_apply(f report_facts, sign integer, only_label text) RETURNS void LANGUAGE plpgsql AS $fn$
    DECLARE
      local_day date;
    BEGIN
      SELECT (f.at AT TIME ZONE coalesce(t.timezone, 'UTC'))::date INTO local_day FROM tenants t WHERE t.id = f.tenant_id;
      IF local_day IS NULL THEN
        RETURN; -- the tenant is being deleted
      END IF;
      -- In key order, so that two transactions never take the same rows in opposite orders.
      WITH dims (dimension, key) AS (
        SELECT d.dimension, d.key
        FROM (VALUES ('agent', f.agent_id), ('department', f.department_id::text), ('tenant', '')) AS d (dimension, key)
        WHERE d.key IS NOT NULL AND only_label IS NULL
        UNION ALL
        SELECT 'label', cl.label_id FROM conversation_labels cl WHERE cl.conversation_id = f.conversation_id AND only_label IS NULL
        UNION ALL
        SELECT 'label', only_label WHERE only_label IS NOT NULL
      ),
      totals AS (
        INSERT INTO report_daily AS r (tenant_id, kind, dimension, key, day, n, seconds_sum, bh_n, bh_seconds_sum, value_sum, ms_sum, bh_ms_sum, satisfied)
        SELECT f.tenant_id, f.kind, d.dimension, d.key, local_day, sign, sign * coalesce(f.seconds, 0),
               CASE WHEN f.bh_seconds IS NULL THEN 0 ELSE sign END, sign * coalesce(f.bh_seconds, 0), sign * coalesce(f.value, 0),
               sign * coalesce(round(f.seconds * 1000)::bigint, 0), sign * coalesce(round(f.bh_seconds * 1000)::bigint, 0),
               CASE WHEN f.value >= 4 THEN sign ELSE 0 END
        FROM dims d
        ORDER BY d.dimension, d.key
        ON CONFLICT (tenant_id, kind, dimension, key, day) DO UPDATE
          SET n = r.n + excluded.n, seconds_sum = r.seconds_sum + excluded.seconds_sum, bh_n = r.bh_n + excluded.bh_n,
              bh_seconds_sum = r.bh_seconds_sum + excluded.bh_seconds_sum, value_sum = r.value_sum + excluded.value_sum,
              ms_sum = r.ms_sum + excluded.ms_sum, bh_ms_sum = r.bh_ms_sum + excluded.bh_ms_sum, satisfied = r.satisfied + excluded.satisfied
      )
      INSERT INTO report_daily_grid AS g (tenant_id, kind, dimension, key, day, business, grid, n)
      SELECT f.tenant_id, f.kind, d.dimension, d.key, local_day, b.business, b.grid, sign
      FROM dims d CROSS JOIN (VALUES (false, report_grid(f.seconds)), (true, report_grid(f.bh_seconds))) AS b (business, grid)
      WHERE b.grid IS NOT NULL
      ORDER BY d.dimension, d.key, b.business
      ON CONFLICT (tenant_id, kind, dimension, key, day, business, grid) DO UPDATE SET n = g.n + excluded.n;
    END
    $fn$;

    -- Every fact, into its rollups in its own statement. A fact's writer holds the conversation's facts row
    -- (src/reports/facts.ts), as a label's change does below, so the labels read here are the ones that
    -- commit with it; a csat fact (a trigger on surveys) takes that row here. The shared lock of the
    -- tenant's rollups keeps a change of time zone (which rebuilds them) from missing a fact in flight.
    CREATE OR REPLACE FUNCTION report_facts_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(1919251556, hashtext(NEW.tenant_id) & 2147483647);
      IF NEW.kind = 'csat' THEN
        PERFORM 1 FROM conversation_facts WHERE conversation_id = NEW.conversation_id FOR UPDATE;
      END IF;
      PERFORM report_rollup_apply(NEW, 1, NULL);
      RETURN NULL;
    END
    $fn$;

    -- A label put on (or taken off) a conversation carries its facts into (out of) that label's rollups.
    CREATE FUNCTION conversation_labels_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      link conversation_labels;
      f report_facts;
    BEGIN
      IF TG_OP = 'INSERT' THEN link := NEW; ELSE link := OLD; END IF;
      IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM labels WHERE id = link.label_id) THEN
        -- The label itself is being deleted: its rollups go with it.
        DELETE FROM report_daily WHERE tenant_id = link.tenant_id AND dimension = 'label' AND key = link.label_id;
        DELETE FROM report_daily_grid WHERE tenant_id = link.tenant_id AND dimension = 'label' AND key = link.label_id;
        RETURN NULL;
      END IF;
      PERFORM 1 FROM conversation_facts WHERE conversation_id = link.conversation_id FOR UPDATE;
      FOR f IN SELECT * FROM report_facts WHERE conversation_id = link.conversation_id ORDER BY id LOOP
        PERFORM report_rollup_apply(f, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END, link.label_id);
      END LOOP;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER conversation_labels_rollup AFTER INSERT OR DELETE ON conversation_labels
      FOR EACH ROW EXECUTE FUNCTION conversation_labels_rollup();

    -- A tenant's rollups made again from its facts (a new time zone; and below, once for what exists).
    CREATE FUNCTION report_rollup_rebuild(tenant text) RETURNS void LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM pg_advisory_xact_lock(1919251556, hashtext(tenant) & 2147483647);
      DELETE FROM report_daily WHERE tenant_id = tenant;
      DELETE FROM report_daily_grid WHERE tenant_id = tenant;
      WITH src AS (
        SELECT f.kind, d.dimension, d.key, (f.at AT TIME ZONE coalesce(t.timezone, 'UTC'))::date AS day, f.seconds, f.bh_seconds, f.value
        FROM report_facts f
        JOIN tenants t ON t.id = f.tenant_id
        CROSS JOIN LATERAL (
          SELECT 'agent', f.agent_id WHERE f.agent_id IS NOT NULL
          UNION ALL SELECT 'department', f.department_id::text WHERE f.department_id IS NOT NULL
          UNION ALL SELECT 'tenant', ''
          UNION ALL SELECT 'label', cl.label_id FROM conversation_labels cl WHERE cl.conversation_id = f.conversation_id
        ) AS d (dimension, key)
        WHERE f.tenant_id = tenant
      ),
      totals AS (
        INSERT INTO report_daily (tenant_id, kind, dimension, key, day, n, seconds_sum, bh_n, bh_seconds_sum, value_sum, ms_sum, bh_ms_sum, satisfied)
        SELECT tenant, kind, dimension, key, day, count(*), coalesce(sum(seconds), 0), count(bh_seconds), coalesce(sum(bh_seconds), 0),
               coalesce(sum(value), 0), coalesce(sum(round(seconds * 1000)::bigint), 0), coalesce(sum(round(bh_seconds * 1000)::bigint), 0),
               count(*) FILTER (WHERE value >= 4)
        FROM src GROUP BY kind, dimension, key, day
      )
      INSERT INTO report_daily_grid (tenant_id, kind, dimension, key, day, business, grid, n)
      SELECT tenant, kind, dimension, key, day, b.business, b.grid, count(*)
      FROM src CROSS JOIN LATERAL (VALUES (false, report_grid(seconds)), (true, report_grid(bh_seconds))) AS b (business, grid)
      WHERE b.grid IS NOT NULL
      GROUP BY kind, dimension, key, day, b.business, b.grid;
    END
    $fn$;

    CREATE FUNCTION tenants_zone_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM report_rollup_rebuild(NEW.id);
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER tenants_zone_rollup AFTER UPDATE OF timezone ON tenants
      FOR EACH ROW WHEN (OLD.timezone IS DISTINCT FROM NEW.timezone) EXECUTE FUNCTION tenants_zone_rollup();

    -- The queue's wait ends at the assigning update's time (updated_at, from the app's clock, as every
    -- fact's time is), not at the database's now().
    CREATE OR REPLACE FUNCTION conversation_facts_assigned() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE conversation_facts SET first_assigned_at = NEW.updated_at
      WHERE conversation_id = NEW.id AND first_assigned_at IS NULL AND queued_since IS NOT NULL;
      RETURN NULL;
    END
    $fn$;

    SET LOCAL ROLE chat_system;
    SELECT report_rollup_rebuild(id) FROM tenants WHERE EXISTS (SELECT 1 FROM report_facts f WHERE f.tenant_id = tenants.id);
    RESET ROLE;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TRIGGER tenants_zone_rollup ON tenants; DROP FUNCTION tenants_zone_rollup();
       DROP FUNCTION report_rollup_rebuild(text);
       DROP TRIGGER conversation_labels_rollup ON conversation_labels; DROP FUNCTION conversation_labels_rollup();
       CREATE OR REPLACE FUNCTION conversation_facts_assigned() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN
         UPDATE conversation_facts SET first_assigned_at = NEW.assigned_at
         WHERE conversation_id = NEW.id AND first_assigned_at IS NULL AND queued_since IS NOT NULL;
         RETURN NULL;
       END
       $fn$;
       CREATE OR REPLACE FUNCTION report_facts_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
       DECLARE
         zone text;
         local_day date;
       BEGIN
         SELECT timezone INTO zone FROM tenants WHERE id = NEW.tenant_id;
         local_day := (NEW.at AT TIME ZONE coalesce(zone, 'UTC'))::date;
         INSERT INTO report_daily AS r
         SELECT NEW.tenant_id, NEW.kind, d.dimension, d.key, local_day, 1, coalesce(NEW.seconds, 0),
                CASE WHEN NEW.bh_seconds IS NULL THEN 0 ELSE 1 END, coalesce(NEW.bh_seconds, 0), coalesce(NEW.value, 0)
         FROM (VALUES ('agent', NEW.agent_id), ('department', NEW.department_id::text), ('tenant', '')) AS d (dimension, key)
         WHERE d.key IS NOT NULL
         ORDER BY d.dimension, d.key
         ON CONFLICT (tenant_id, kind, dimension, key, day) DO UPDATE
           SET n = r.n + 1, seconds_sum = r.seconds_sum + excluded.seconds_sum, bh_n = r.bh_n + excluded.bh_n,
               bh_seconds_sum = r.bh_seconds_sum + excluded.bh_seconds_sum, value_sum = r.value_sum + excluded.value_sum;
         RETURN NULL;
       END
       $fn$;
       DROP FUNCTION report_rollup_apply(report_facts, integer, text);
       DROP TABLE report_daily_grid;
       ALTER TABLE report_daily DROP COLUMN satisfied, DROP COLUMN bh_ms_sum, DROP COLUMN ms_sum;
       DROP FUNCTION report_grid(double precision);`,
    )
    .execute(db);
}
