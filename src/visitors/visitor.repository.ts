import type { Tx } from '../db/database.ts';

/** Marks visitors as seen now: a live widget socket or a page view keeps them on the online list. */
export async function touchVisitors(trx: Tx, visitorIds: string[], now: Date): Promise<void> {
  if (visitorIds.length === 0) return;
  await trx.updateTable('visitors').set({ last_seen_at: now }).where('id', 'in', visitorIds).execute();
}
