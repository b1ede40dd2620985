import { sql } from 'kysely';
import { claimDueRows } from '../events/queue.repository.ts';
import type { Tx } from '../db/database.ts';
import { offsetPage } from '../db/paginate.ts';
import type { Bot, BotDeliveriesTable, BotKind } from '../db/schema.ts';

// ---- Bots (tenant work, row-level security) --------------------------------------------------------

export async function insertBot(
  trx: Tx,
  row: {
    id: string;
    tenant_id: string;
    name: string;
    kind: BotKind;
    avatar_url: string | null;
    webhook_url: string | null;
    enabled: boolean;
    secret: string;
    handoff_department_id: string | null;
    settings: Record<string, unknown>;
    now: Date;
  },
) {
  const { now, settings, ...values } = row;
  return trx
    .insertInto('bots')
    .values({ ...values, settings: JSON.stringify(settings), created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenants with a bot, deleted ones included: their conversations may still be the bot's (the runner's TenantInterest). */
export async function tenantsWithBots(trx: Tx): Promise<string[]> {
  const rows = await trx.selectFrom('bots').select('tenant_id').distinct().execute();
  return rows.map((r) => r.tenant_id);
}

export async function listBots(trx: Tx, page: { limit: number; offset: number }) {
  return offsetPage(trx.selectFrom('bots').selectAll().orderBy('created_at').orderBy('id'), page);
}

export async function findBot(trx: Tx, id: string, options: { lock?: boolean } = {}): Promise<Bot | undefined> {
  let query = trx.selectFrom('bots').selectAll().where('id', '=', id);
  if (options.lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function updateBot(
  trx: Tx,
  id: string,
  changes: Partial<Pick<Bot, 'name' | 'avatar_url' | 'webhook_url' | 'enabled' | 'handoff_department_id' | 'secret' | 'previous_secret' | 'previous_secret_expires_at'>> & {
    settings?: Record<string, unknown>;
  },
  now: Date,
) {
  const { settings, ...rest } = changes;
  return trx
    .updateTable('bots')
    .set({ ...rest, ...(settings ? { settings: JSON.stringify(settings) } : {}), updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The conversations the bot still holds wait for an agent (handed off, still open), then the bot goes. */
export async function deleteBot(trx: Tx, id: string, now: Date): Promise<boolean> {
  await trx
    .updateTable('conversations')
    .set({ bot_state: 'handed_off', updated_at: now })
    .where('bot_id', '=', id)
    .where('bot_state', '=', 'active')
    .execute();
  return (await trx.deleteFrom('bots').where('id', '=', id).executeTakeFirst()).numDeletedRows === 1n;
}

export async function departmentExists(trx: Tx, id: string): Promise<boolean> {
  return (await trx.selectFrom('departments').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

// ---- The runner (system role, every tenant) -------------------------------------------------------

/** Of these conversations, those a bot holds now, with the bot's kind. */
export async function conversationsHeldByBots(trx: Tx, conversationIds: string[]) {
  if (conversationIds.length === 0) return [];
  return trx
    .selectFrom('conversations as c')
    .innerJoin('bots as b', 'b.id', 'c.bot_id')
    .select(['c.id', 'b.id as bot_id', 'b.kind'])
    .where('c.id', 'in', conversationIds)
    .where('c.bot_state', '=', 'active')
    .execute();
}

export type NewBotDelivery = Pick<BotDeliveriesTable, 'id' | 'tenant_id' | 'bot_id' | 'conversation_id' | 'event_id' | 'event_type' | 'body'>;

/** One delivery per (bot, event): an event read twice is handled once. */
export async function insertBotDeliveries(trx: Tx, rows: NewBotDelivery[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await trx
    .insertInto('bot_deliveries')
    .values(rows.map((r) => ({ ...r, next_attempt_at: sql<Date>`now()` })))
    .onConflict((oc) => oc.columns(['bot_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
  return inserted.length;
}

/** Claims due deliveries for `leaseMs` (SKIP LOCKED: instances take different rows), with their bots. */
export async function claimDueBotDeliveries(trx: Tx, limit: number, lockToken: string, leaseMs: number) {
  const claimed = await claimDueRows(trx, 'bot_deliveries', ['id', 'tenant_id', 'bot_id', 'conversation_id', 'event_id', 'event_type', 'body', 'retry_step'], limit, lockToken, leaseMs);
  if (claimed.length === 0) return [];
  const bots = await trx
    .selectFrom('bots')
    .selectAll()
    .where('id', 'in', [...new Set(claimed.map((c) => c.bot_id))])
    .execute();
  const byId = new Map(bots.map((b) => [b.id, b]));
  return claimed.map((c) => ({ ...c, bot: byId.get(c.bot_id)! }));
}

export type ClaimedBotDelivery = Awaited<ReturnType<typeof claimDueBotDeliveries>>[number];

export async function recordBotSuccess(trx: Tx, id: string, lockToken: string, statusCode: number | null): Promise<boolean> {
  const result = await trx
    .updateTable('bot_deliveries')
    .set({ status: 'succeeded', next_attempt_at: null, locked_until: null, lock_token: null, last_status_code: statusCode, last_error: null, delivered_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('lock_token', '=', lockToken)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

