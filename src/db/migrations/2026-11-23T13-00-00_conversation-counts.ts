// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

const tenantTable = (table: string) => `
  ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
  ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
  CREATE POLICY ${table}_tenant_isolation ON ${table} TO chat_app
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
  CREATE POLICY ${table}_system ON ${table} TO chat_system USING (true) WITH CHECK (true);
  GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO chat_app, chat_system;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- Exact list totals for the everyday filters (status, assignee, department, and none), kept by the
    -- database as conversations change, so a list page never counts its rows. One row per combination of
    -- the three and per shard; a filter on any of them sums the rows that match. '' stands for "none"
    -- (unassigned, no department), so that every key column can sit in the unique index.
    -- Shards: concurrent changes to one combination (every new conversation of a tenant is open and
    -- unassigned) would otherwise queue on one row until each transaction commits. A conversation always
    -- counts in the shard of its id, so its increments and decrements meet the same row.
    CREATE TABLE conversation_counts (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      status text NOT NULL,
      assignee_key text NOT NULL,
      department_key text NOT NULL,
      shard smallint NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (tenant_id, status, assignee_key, department_key, shard)
    );
    ${tenantTable('conversation_counts')}

    -- A trigger rather than the repositories: every path that writes conversations (releases on member
    -- removal, ON DELETE SET NULL from users and departments, the seed, future code) keeps the counts.
    -- It runs as the caller, so row-level security holds for the counter rows as for the conversation.
    CREATE FUNCTION conversation_counts_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      own_shard smallint;
      old_key text[];
      new_key text[];
    BEGIN
      IF TG_OP = 'DELETE' THEN
        -- Only ever a decrement of a row the insert made: no insert, so a tenant being deleted (whose
        -- counter rows cascade away first) is no foreign-key error.
        UPDATE conversation_counts c SET n = c.n - 1
        WHERE c.tenant_id = OLD.tenant_id AND c.status = OLD.status
          AND c.assignee_key = coalesce(OLD.assigned_user_id, '') AND c.department_key = coalesce(OLD.department_id::text, '')
          AND c.shard = hashtext(OLD.id) & 7;
        RETURN NULL;
      END IF;
      own_shard := hashtext(NEW.id) & 7;
      new_key := ARRAY[NEW.status, coalesce(NEW.assigned_user_id, ''), coalesce(NEW.department_id::text, '')];
      IF TG_OP = 'INSERT' THEN
        INSERT INTO conversation_counts AS c VALUES (NEW.tenant_id, new_key[1], new_key[2], new_key[3], own_shard, 1)
        ON CONFLICT (tenant_id, status, assignee_key, department_key, shard) DO UPDATE SET n = c.n + 1;
        RETURN NULL;
      END IF;
      old_key := ARRAY[OLD.status, coalesce(OLD.assigned_user_id, ''), coalesce(OLD.department_id::text, '')];
      -- Both rows in key order: two transactions moving conversations of one shard between the same two
      -- combinations, in opposite directions, lock them in the same order and cannot deadlock.
      INSERT INTO conversation_counts AS c
      SELECT NEW.tenant_id, k.status, k.assignee_key, k.department_key, own_shard, k.delta
      FROM (VALUES (old_key[1], old_key[2], old_key[3], -1), (new_key[1], new_key[2], new_key[3], 1))
        AS k (status, assignee_key, department_key, delta)
      ORDER BY k.status, k.assignee_key, k.department_key
      ON CONFLICT (tenant_id, status, assignee_key, department_key, shard) DO UPDATE SET n = c.n + excluded.n;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER conversation_counts_insert AFTER INSERT ON conversations
      FOR EACH ROW EXECUTE FUNCTION conversation_counts_track();
    CREATE TRIGGER conversation_counts_delete AFTER DELETE ON conversations
      FOR EACH ROW EXECUTE FUNCTION conversation_counts_track();
    -- Only changes of a counted column: a new message (last_message, message_count) costs nothing here.
    CREATE TRIGGER conversation_counts_update AFTER UPDATE ON conversations
      FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.assigned_user_id IS DISTINCT FROM NEW.assigned_user_id
                         OR OLD.department_id IS DISTINCT FROM NEW.department_id)
      EXECUTE FUNCTION conversation_counts_track();

    -- Conversations that exist already. The owner sees no rows under forced row-level security: the
    -- system role counts them.
    SET LOCAL ROLE chat_system;
    INSERT INTO conversation_counts
    SELECT tenant_id, status, coalesce(assigned_user_id, ''), coalesce(department_id::text, ''), hashtext(id) & 7, count(*)
    FROM conversations
    GROUP BY 1, 2, 3, 4, 5;
    RESET ROLE;
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `DROP TRIGGER conversation_counts_update ON conversations;
       DROP TRIGGER conversation_counts_delete ON conversations;
       DROP TRIGGER conversation_counts_insert ON conversations;
       DROP FUNCTION conversation_counts_track();
       DROP TABLE conversation_counts;`,
    )
    .execute(db);
}
