import type { components } from '../../generated/api.ts';

export type Presence = components['schemas']['Presence'];

/** Where members' presence is read. The realtime gateway keeps it; until then everyone reads offline. */
export interface PresenceStore {
  presenceOf(tenantId: string, userIds: string[]): Promise<Map<string, Presence>>;
}

export const everyoneOffline: PresenceStore = {
  presenceOf: async (_tenantId, userIds) => new Map(userIds.map((id) => [id, 'offline' as const])),
};
