// Frozen: this migration must keep producing the same schema forever. It imports nothing from the app.
import { type Kysely, sql } from 'kysely';

// Columns on tables that already carry tenant_id (or are the tenant) and row-level security, so no new
// policy is needed: the tenant's own rows hold its hours and routing settings.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    -- {time_zone, weekly, overrides} as the contract's BusinessHours (validated by the service: an IANA
    -- zone, HH:MM periods, real dates); null is "no hours": always open. A department without its own
    -- uses the tenant's.
    ALTER TABLE tenants ADD COLUMN business_hours jsonb;
    ALTER TABLE departments ADD COLUMN business_hours jsonb;

    -- Routing of new and transferred conversations: the tenant's default, and per department (null
    -- follows the tenant). Round robin's position is the member given the last conversation, kept here
    -- so every instance continues from the same place.
    ALTER TABLE tenants ADD COLUMN routing text NOT NULL DEFAULT 'manual' CHECK (routing IN ('manual', 'round_robin', 'least_loaded'));
    ALTER TABLE tenants ADD COLUMN round_robin_last_user_id text;
    ALTER TABLE departments ADD COLUMN routing text CHECK (routing IN ('manual', 'round_robin', 'least_loaded'));
    ALTER TABLE departments ADD COLUMN round_robin_last_user_id text;
    -- Minutes an assigned conversation's oldest unanswered visitor message may wait before it goes back
    -- to routing; null is off.
    ALTER TABLE departments ADD COLUMN return_after_minutes integer CHECK (return_after_minutes > 0);

    -- Open conversations a member takes at most from routing; null is no limit.
    ALTER TABLE memberships ADD COLUMN capacity integer DEFAULT 5 CHECK (capacity >= 0);
  `,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `
    ALTER TABLE memberships DROP COLUMN capacity;
    ALTER TABLE departments DROP COLUMN return_after_minutes, DROP COLUMN round_robin_last_user_id, DROP COLUMN routing, DROP COLUMN business_hours;
    ALTER TABLE tenants DROP COLUMN round_robin_last_user_id, DROP COLUMN routing, DROP COLUMN business_hours;
  `,
    )
    .execute(db);
}
