// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// What writing the report facts costs a send and a close (issue 44's goal: at most 10% of their
// throughput). Each fact went into its rollups in its own statement: three daily rows and up to six grid
// rows upserted per fact, rows every reply of the tenant that day shares, held locked to the commit. The
// facts stay written in the transaction of what they describe; their rollups are now folded in later, many
// facts in one statement (one upsert per row they share), by whoever needs them first:
// - a report read folds its tenant's waiting facts before it reads (src/reports/report.service.ts), so a
//   report shows every fact committed before it was asked for;
// - a scheduled job folds every tenant's, so that waiting facts stay few (src/reports/fold.job.ts).
// A fact waits in report_facts_pending until folded. Folds of a tenant take its rollups' lock (the one
// a change of time zone already took), so they run one at a time: none folds a fact twice, and rollup
// rows are written by one transaction at a time. A fact is counted for the labels its conversation
// carries when it is folded; a label put on or taken off moves only the facts already folded (the
// waiting ones are folded with the labels as they are then).
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    CREATE TABLE report_facts_pending (
      fact_id bigint NOT NULL,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      conversation_id text NOT NULL
    );
    CREATE INDEX report_facts_pending_idx ON report_facts_pending (tenant_id, conversation_id);
    ALTER TABLE report_facts_pending ENABLE ROW LEVEL SECURITY;
    ALTER TABLE report_facts_pending FORCE ROW LEVEL SECURITY;
    CREATE POLICY report_facts_pending_tenant_isolation ON report_facts_pending TO chat_app
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
    CREATE POLICY report_facts_pending_system ON report_facts_pending TO chat_system USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, UPDATE, DELETE ON report_facts_pending TO chat_app, chat_system;

    CREATE OR REPLACE FUNCTION report_facts_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO report_facts_pending (fact_id, tenant_id, conversation_id) VALUES (NEW.id, NEW.tenant_id, NEW.conversation_id);
      RETURN NULL;
    END
    $fn$;

    -- The tenant's waiting facts into its rollups, grouped: the same sums and grid counts as a rebuild of
    -- them would give. Answers how many facts it folded.
    CREATE FUNCTION report_rollup_fold(tenant text) RETURNS bigint LANGUAGE plpgsql AS $fn$
    DECLARE
      folded bigint;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM report_facts_pending WHERE tenant_id = tenant) THEN
        RETURN 0;
      END IF;
      PERFORM pg_advisory_xact_lock(1919251556, hashtext(tenant) & 2147483647);
      WITH done AS (
        DELETE FROM report_facts_pending p WHERE p.tenant_id = tenant RETURNING p.fact_id
      ),
      src AS (
        SELECT f.kind, d.dimension, d.key, (f.at AT TIME ZONE coalesce(t.timezone, 'UTC'))::date AS day, f.seconds, f.bh_seconds, f.value
        FROM done
        JOIN report_facts f ON f.id = done.fact_id
        JOIN tenants t ON t.id = f.tenant_id
        CROSS JOIN LATERAL (
          SELECT 'agent', f.agent_id WHERE f.agent_id IS NOT NULL
          UNION ALL SELECT 'department', f.department_id::text WHERE f.department_id IS NOT NULL
          UNION ALL SELECT 'tenant', ''
          UNION ALL SELECT 'label', cl.label_id FROM conversation_labels cl WHERE cl.conversation_id = f.conversation_id
        ) AS d (dimension, key)
      ),
      totals AS (
        INSERT INTO report_daily AS r (tenant_id, kind, dimension, key, day, n, seconds_sum, bh_n, bh_seconds_sum, value_sum, ms_sum, bh_ms_sum, satisfied)
        SELECT tenant, kind, dimension, key, day, count(*), coalesce(sum(seconds), 0), count(bh_seconds), coalesce(sum(bh_seconds), 0),
               coalesce(sum(value), 0), coalesce(sum(round(seconds * 1000)::bigint), 0), coalesce(sum(round(bh_seconds * 1000)::bigint), 0),
               count(*) FILTER (WHERE value >= 4)
        FROM src GROUP BY kind, dimension, key, day
        ON CONFLICT (tenant_id, kind, dimension, key, day) DO UPDATE
          SET n = r.n + excluded.n, seconds_sum = r.seconds_sum + excluded.seconds_sum, bh_n = r.bh_n + excluded.bh_n,
              bh_seconds_sum = r.bh_seconds_sum + excluded.bh_seconds_sum, value_sum = r.value_sum + excluded.value_sum,
              ms_sum = r.ms_sum + excluded.ms_sum, bh_ms_sum = r.bh_ms_sum + excluded.bh_ms_sum, satisfied = r.satisfied + excluded.satisfied
      ),
      grid AS (
        INSERT INTO report_daily_grid AS g (tenant_id, kind, dimension, key, day, business, grid, n)
        SELECT tenant, kind, dimension, key, day, b.business, b.grid, count(*)
        FROM src CROSS JOIN LATERAL (VALUES (false, report_grid(seconds)), (true, report_grid(bh_seconds))) AS b (business, grid)
        WHERE b.grid IS NOT NULL
        GROUP BY kind, dimension, key, day, b.business, b.grid
        ON CONFLICT (tenant_id, kind, dimension, key, day, business, grid) DO UPDATE SET n = g.n + excluded.n
      )
      SELECT count(*) INTO folded FROM done;
      RETURN folded;
    END
    $fn$;

    -- A label put on (or taken off) a conversation carries its folded facts into (out of) that label's
    -- rollups; its waiting facts are folded later with the labels it has then.
    CREATE OR REPLACE FUNCTION conversation_labels_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      link conversation_labels;
      f report_facts;
    BEGIN
      IF TG_OP = 'INSERT' THEN link := NEW; ELSE link := OLD; END IF;
      PERFORM pg_advisory_xact_lock(1919251556, hashtext(link.tenant_id) & 2147483647);
      IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM labels WHERE id = link.label_id) THEN
        -- The label itself is being deleted: its rollups go with it.
        DELETE FROM report_daily WHERE tenant_id = link.tenant_id AND dimension = 'label' AND key = link.label_id;
        DELETE FROM report_daily_grid WHERE tenant_id = link.tenant_id AND dimension = 'label' AND key = link.label_id;
        RETURN NULL;
      END IF;
      FOR f IN
        SELECT * FROM report_facts rf
        WHERE rf.conversation_id = link.conversation_id
          AND rf.id NOT IN (SELECT p.fact_id FROM report_facts_pending p WHERE p.tenant_id = link.tenant_id AND p.conversation_id = link.conversation_id)
        ORDER BY rf.id
      LOOP
        PERFORM report_rollup_apply(f, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END, link.label_id);
      END LOOP;
      RETURN NULL;
    END
    $fn$;

    -- A tenant's rollups made again from all its facts (a new time zone): none is left waiting.
    CREATE OR REPLACE FUNCTION report_rollup_rebuild(tenant text) RETURNS void LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM pg_advisory_xact_lock(1919251556, hashtext(tenant) & 2147483647);
      DELETE FROM report_facts_pending WHERE tenant_id = tenant;
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
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `SET LOCAL ROLE chat_system;
       SELECT report_rollup_fold(tenant_id) FROM (SELECT DISTINCT tenant_id FROM report_facts_pending) AS waiting;
       RESET ROLE;
       CREATE OR REPLACE FUNCTION report_rollup_rebuild(tenant text) RETURNS void LANGUAGE plpgsql AS $fn$
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
       CREATE OR REPLACE FUNCTION conversation_labels_rollup() RETURNS trigger LANGUAGE plpgsql AS $fn$
       DECLARE
         link conversation_labels;
         f report_facts;
       BEGIN
         IF TG_OP = 'INSERT' THEN link := NEW; ELSE link := OLD; END IF;
         IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM labels WHERE id = link.label_id) THEN
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
       DROP FUNCTION report_rollup_fold(text);
       DROP TABLE report_facts_pending;`,
    )
    .execute(db);
}
