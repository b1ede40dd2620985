import { expect } from 'chai';
import fc from 'fast-check';
import * as conversationRepo from '../../src/conversations/conversation.repository.ts';
import { EventBus } from '../../src/events/bus.ts';
import type { Presence, PresenceStore } from '../../src/presence/presence.ts';
import { type Candidate, pick } from '../../src/routing/pick.ts';
import { RoutingService } from '../../src/routing/routing.service.ts';
import { newId } from '../../src/shared/ids.ts';
import { addMember, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

class FakePresence implements PresenceStore {
  readonly online = new Set<string>();
  async presenceOf(_tenantId: string, userIds: string[]): Promise<Map<string, Presence>> {
    return new Map(userIds.map((id) => [id, this.online.has(id) ? 'online' : 'offline']));
  }
}

const member = (user_id: string, load: number, capacity: number | null = 5, last: number | null = null): Candidate => ({
  user_id,
  load,
  capacity,
  last_assigned_at: last === null ? null : new Date(last),
});

describe('routing: the pick (pure)', () => {
  it('least loaded takes the fewest open, ties to the longest wait (never assigned first); nobody with room is null', () => {
    expect(pick('least_loaded', [member('usr_a', 2), member('usr_b', 1), member('usr_c', 1, 5, 10)], null)).to.equal('usr_b');
    expect(pick('least_loaded', [member('usr_a', 1, 5, 20), member('usr_b', 1, 5, 10)], null)).to.equal('usr_b');
    expect(pick('least_loaded', [member('usr_a', 5, 5), member('usr_b', 0, 0)], null)).to.equal(null);
    expect(pick('least_loaded', [member('usr_a', 50, null)], null), 'null capacity is no limit').to.equal('usr_a');
  });

  it('round robin goes on after the last one, wrapping, and passes over who has no room', () => {
    const all = [member('usr_a', 0), member('usr_b', 5, 5), member('usr_c', 0)];
    expect(pick('round_robin', all, null)).to.equal('usr_a');
    expect(pick('round_robin', all, 'usr_a')).to.equal('usr_c');
    expect(pick('round_robin', all, 'usr_c')).to.equal('usr_a');
    expect(pick('round_robin', all, 'usr_gone')).to.equal('usr_a');
  });
});

interface World {
  t: TestTenant;
  agents: string[];
  presence: FakePresence;
  instances: RoutingService[];
}

async function world(mode: 'round_robin' | 'least_loaded', capacities: (number | null)[]): Promise<World> {
  const { database } = await getHarness();
  const t = await createTenant();
  const agents: string[] = [];
  for (const capacity of capacities) {
    const { userId } = await addMember(t);
    agents.push(userId);
    await database.withTenant(t.tenantId, (trx) => trx.updateTable('memberships').set({ capacity }).where('user_id', '=', userId).execute());
  }
  // The owner is a full seat too: keep them out of routing by giving them no room.
  await database.withTenant(t.tenantId, async (trx) => {
    await trx.updateTable('memberships').set({ capacity: 0 }).where('user_id', '=', t.owner.userId).execute();
    await trx.updateTable('tenants').set({ routing: mode }).where('id', '=', t.tenantId).execute();
  });
  const presence = new FakePresence();
  // Two "instances": two services, each with its own bus, on the one database.
  const instances = [0, 1].map(() => new RoutingService({ database, bus: new EventBus(), presence }));
  return { t, agents, presence, instances };
}

async function arrive(w: World, n: number): Promise<void> {
  const { database } = await getHarness();
  await Promise.all(
    Array.from({ length: n }, () =>
      database.withTenant(w.t.tenantId, (trx) =>
        conversationRepo.insertConversation(trx, {
          id: newId('conversation'),
          tenant_id: w.t.tenantId,
          status: 'open',
          priority: 'normal',
          subject: null,
          visitor_id: null,
          contact_id: null,
          department_id: null,
          assigned_user_id: null,
          now: new Date(),
        }),
      ),
    ),
  );
}

/** Both instances give out the queue at once, as two instances woken by the same burst would. */
const route = (w: World) => Promise.all(w.instances.map((i) => i.dispatch(w.t.tenantId)));

async function snapshot(w: World) {
  const { database } = await getHarness();
  return database.withTenant(w.t.tenantId, async (trx) => ({
    conversations: await trx.selectFrom('conversations').select(['id', 'status', 'assigned_user_id', 'created_at']).orderBy('created_at').orderBy('id').execute(),
    capacity: new Map((await trx.selectFrom('memberships').select(['user_id', 'capacity']).execute()).map((m) => [m.user_id, m.capacity])),
    assignedEvents: await trx.selectFrom('events').select(['conversation_id', 'data']).where('type', '=', 'conversation.assigned').execute(),
  }));
}

/** The guarantees, after every step. */
async function check(w: World): Promise<void> {
  const { conversations, capacity, assignedEvents } = await snapshot(w);
  const load = new Map<string, number>();
  for (const c of conversations) if (c.status === 'assigned') load.set(c.assigned_user_id!, (load.get(c.assigned_user_id!) ?? 0) + 1);
  for (const [userId, n] of load) {
    const cap = capacity.get(userId);
    if (cap !== null && cap !== undefined) expect(n, `${userId} over capacity ${cap}`).to.be.at.most(cap);
  }
  // Never given to two: each conversation was given out by routing at most once (nobody else unassigns here).
  const given = assignedEvents.map((e) => e.conversation_id);
  expect(new Set(given).size, 'a conversation given out twice').to.equal(given.length);
  // Never queued while someone eligible is available.
  const queued = conversations.filter((c) => c.status === 'open' && c.assigned_user_id === null);
  const withRoom = w.agents.filter((a) => w.presence.online.has(a) && (capacity.get(a) === null || (load.get(a) ?? 0) < capacity.get(a)!));
  if (queued.length > 0) expect(withRoom, `${queued.length} queued while these have room`).to.deep.equal([]);
}

type Step = { kind: 'arrive'; n: number } | { kind: 'online'; agent: number } | { kind: 'offline'; agent: number } | { kind: 'close'; which: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('arrive' as const), n: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('online' as const), agent: fc.nat(5) }),
  fc.record({ kind: fc.constant('offline' as const), agent: fc.nat(5) }),
  fc.record({ kind: fc.constant('close' as const), which: fc.nat(30) }),
);

describe('routing: giving out the queue', function () {
  this.timeout(300_000);

  it('N conversations at once over K agents of capacity C: nobody over capacity, none left while capacity remains, none given twice', async () => {
    const w = await world('least_loaded', [2, 2, 3]);
    w.agents.forEach((a) => w.presence.online.add(a));
    await arrive(w, 12);
    await route(w);
    await check(w);
    const { conversations } = await snapshot(w);
    expect(conversations.filter((c) => c.status === 'assigned')).to.have.length(7);
    expect(conversations.filter((c) => c.status === 'open')).to.have.length(5);
    // The oldest were given out first.
    const firstOpen = conversations.findIndex((c) => c.status === 'open');
    expect(conversations.slice(firstOpen).every((c) => c.status === 'open')).to.equal(true);
  });

  it('manual (the default) gives nothing out', async () => {
    const w = await world('least_loaded', [5]);
    const { database } = await getHarness();
    await database.withTenant(w.t.tenantId, (trx) => trx.updateTable('tenants').set({ routing: 'manual' }).where('id', '=', w.t.tenantId).execute());
    w.presence.online.add(w.agents[0]!);
    await arrive(w, 2);
    expect(await route(w)).to.deep.equal([0, 0]);
  });

  for (const mode of ['least_loaded', 'round_robin'] as const) {
    it(`${mode}: conversations arriving while agents come and go and close keep every guarantee after every step (fast-check, two instances)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 6 }),
          fc.array(stepArb, { minLength: 1, maxLength: 12 }),
          async (capacities, steps) => {
            const w = await world(mode, capacities);
            const { database } = await getHarness();
            for (const step of steps) {
              const agent = step.kind === 'online' || step.kind === 'offline' ? w.agents[step.agent % w.agents.length]! : undefined;
              if (step.kind === 'arrive') await arrive(w, step.n);
              else if (step.kind === 'online') w.presence.online.add(agent!);
              else if (step.kind === 'offline') w.presence.online.delete(agent!);
              else {
                const assigned = (await snapshot(w)).conversations.filter((c) => c.status === 'assigned');
                const chosen = assigned[step.which % Math.max(assigned.length, 1)];
                if (chosen) await database.withTenant(w.t.tenantId, (trx) => trx.updateTable('conversations').set({ status: 'closed', closed_at: new Date() }).where('id', '=', chosen.id).execute());
              }
              await route(w);
              await check(w);
            }
          },
        ),
        { numRuns: 12 },
      );
    });
  }

  it('round robin is fair: over a run no agent is more than one ahead of another', async () => {
    const w = await world('round_robin', [null, null, null, null]);
    w.agents.forEach((a) => w.presence.online.add(a));
    for (let burst = 0; burst < 5; burst++) {
      await arrive(w, 1 + burst * 3);
      await route(w);
    }
    const { conversations } = await snapshot(w);
    const counts = w.agents.map((a) => conversations.filter((c) => c.assigned_user_id === a).length);
    expect(counts.reduce((x, y) => x + y)).to.equal(conversations.length);
    expect(Math.max(...counts) - Math.min(...counts), JSON.stringify(counts)).to.be.at.most(1);
  });

  it('the bus wakes routing: a conversation closing gives the oldest queued one to the agent who now has room', async () => {
    const { database } = await getHarness();
    const w = await world('least_loaded', [1]);
    const agent = w.agents[0]!;
    w.presence.online.add(agent);
    await arrive(w, 2);
    await route(w);
    const before = (await snapshot(w)).conversations;
    expect(before.map((c) => c.status)).to.deep.equal(['assigned', 'open']);
    // The closing goes through the app's bus, as a member's close would: its event wakes routing.
    const bus = new EventBus();
    const routing = new RoutingService({ database, bus, presence: w.presence });
    const { inTenantTransaction } = await import('../../src/events/outbox.ts');
    await inTenantTransaction(database, bus, w.t.tenantId, async (trx, emit) => {
      await trx.updateTable('conversations').set({ status: 'closed', closed_at: new Date() }).where('id', '=', before[0]!.id).execute();
      await emit('conversation.closed', { conversation_id: before[0]!.id, survey_id: null, closed_at: new Date().toISOString() }, { conversationId: before[0]!.id });
    });
    await routing.wake(w.t.tenantId);
    const after = (await snapshot(w)).conversations;
    expect(after.map((c) => [c.status, c.assigned_user_id])).to.deep.equal([
      ['closed', agent],
      ['assigned', agent],
    ]);
    routing.stop();
  });
});
