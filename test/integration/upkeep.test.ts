import { expect } from 'chai';
import pino from 'pino';
import type { Connection } from '../../src/realtime/connection.ts';
import { heartbeat, type UpkeepContext } from '../../src/realtime/upkeep.ts';
import { touchVisitors } from '../../src/visitors/visitor.repository.ts';
import { getHarness } from '../support/harness.ts';
import { createTenant, createVisitor } from '../support/factories.ts';

describe('socket upkeep', () => {
  it('a heartbeat checks each login once and marks each tenant\'s visitors seen in one update, however many sockets share them', async () => {
    const lookups: string[] = [];
    const touched: { tenantId: string; visitorIds: string[] }[] = [];
    const pinged: string[] = [];
    const ctx = {
      database: {
        // The visitor update runs in the tenant's transaction: record what it was given instead.
        // The ids travel as the statement's one array parameter.
        withTenant: async (tenantId: string, fn: (trx: unknown) => Promise<void>) =>
          fn({
            updateTable: () => ({
              set: () => ({
                where: (condition: { toOperationNode(): { parameters: { value: string[] }[] } }) => ({
                  execute: async () => touched.push({ tenantId, visitorIds: [...condition.toOperationNode().parameters[0]!.value].sort() }),
                }),
              }),
            }),
          }),
      },
      presence: { refresh: async () => undefined },
      findSession: async (tenantId: string, userId: string, sessionId: string) => {
        lookups.push(`${tenantId}|${userId}|${sessionId}`);
        return { sessionLive: true, membership: { role: 'agent' } };
      },
      apiKeyLive: async () => true,
      logger: pino({ level: 'silent' }),
    } as unknown as UpkeepContext;
    const socket = (id: string, tenantId: string, audience: Connection['audience']) =>
      ({ id, tenantId, audience, status: 'online', alive: true, backlog: undefined, expiresAt: undefined, expiryTimer: undefined, ws: { ping: () => pinged.push(id), close: () => undefined, terminate: () => undefined } }) as unknown as Connection;
    const member = (userId: string, sessionId: string) => ({ kind: 'member', userId, sessionId, role: 'agent' }) as unknown as Connection['audience'];
    const visitor = (visitorId: string) => ({ kind: 'visitor', visitorId }) as unknown as Connection['audience'];
    const sockets = new Set([
      ...Array.from({ length: 3 }, (_, i) => socket(`a${i}`, 'tn_a', member('usr_1', 'ses_1'))),
      socket('a3', 'tn_a', member('usr_1', 'ses_2')),
      socket('b0', 'tn_b', member('usr_1', 'ses_1')),
      ...Array.from({ length: 4 }, (_, i) => socket(`v${i}`, 'tn_a', visitor(`vis_${i}`))),
      socket('w0', 'tn_b', visitor('vis_9')),
      // Dropped at this heartbeat (no answer to the last ping): not seen, not pinged.
      { ...socket('x0', 'tn_b', visitor('vis_gone')), alive: false } as Connection,
    ]);
    await heartbeat(ctx, sockets);
    expect(lookups.sort()).to.deep.equal(['tn_a|usr_1|ses_1', 'tn_a|usr_1|ses_2', 'tn_b|usr_1|ses_1']);
    expect(touched.sort((a, b) => a.tenantId.localeCompare(b.tenantId))).to.deep.equal([
      { tenantId: 'tn_a', visitorIds: ['vis_0', 'vis_1', 'vis_2', 'vis_3'] },
      { tenantId: 'tn_b', visitorIds: ['vis_9'] },
    ]);
    expect(pinged).to.have.length(sockets.size - 1);
  });

  it('marks 70,000 visitors seen in one statement (past the 65,535 parameters a list of them would need)', async function () {
    this.timeout(60_000);
    const { deps } = await getHarness();
    const t = await createTenant();
    const visitorId = await createVisitor(t);
    const ids = [...Array.from({ length: 70_000 }, (_, i) => `vis_missing_${i}`), visitorId];
    const seen = new Date(Date.now() + 60_000);
    await deps.database.withTenant(t.tenantId, (trx) => touchVisitors(trx, ids, seen));
    const row = await deps.database.withTenant(t.tenantId, (trx) => trx.selectFrom('visitors').select('last_seen_at').where('id', '=', visitorId).executeTakeFirstOrThrow());
    expect(new Date(row.last_seen_at!).getTime()).to.equal(seen.getTime());
  });
});
