import type { FeedRow } from './feed.repository.ts';

/**
 * The envelope of a stored event, exactly as on the events feed: the same bytes reach a socket, a webhook
 * endpoint, a workflow's post and a bot.
 */
export const envelopeOf = (row: FeedRow, data: unknown): string =>
  JSON.stringify({ id: row.id, type: row.type, tenant_id: row.tenant_id, created_at: row.created_at.toISOString(), data });
