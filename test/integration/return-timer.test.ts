import { expect } from 'chai';
import { sql } from 'kysely';
import { EventBus } from '../../src/events/bus.ts';
import type { Presence, PresenceStore } from '../../src/presence/presence.ts';
import { RETURN_NOTICE, RoutingService } from '../../src/routing/routing.service.ts';
import { newId, newUuid } from '../../src/shared/ids.ts';
import { addMember, createTenant, eventsOf, messagesOf, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

class FakePresence implements PresenceStore {
  readonly online = new Set<string>();
  async presenceOf(_tenantId: string, userIds: string[]): Promise<Map<string, Presence>> {
    return new Map(userIds.map((id) => [id, this.online.has(id) ? 'online' : 'offline']));
  }
}

const MINUTE = 60_000;

describe('routing: the return timer', function () {
  this.timeout(60_000);

  /** A department with a 10-minute timer, agents A and B online, and a conversation routing gave to A. */
  async function scene() {
    const { database } = await getHarness();
    const t: TestTenant = await createTenant();
    const a = (await addMember(t)).userId;
    const b = (await addMember(t)).userId;
    const departmentId = newUuid();
    const conversationId = newId('conversation');
    await database.withTenant(t.tenantId, async (trx) => {
      await trx.updateTable('memberships').set({ capacity: 0 }).where('user_id', '=', t.owner.userId).execute();
      await trx.insertInto('departments').values({ id: departmentId, tenant_id: t.tenantId, name: 'Support' }).execute();
      await trx.insertInto('department_members').values([a, b].map((user_id) => ({ tenant_id: t.tenantId, department_id: departmentId, user_id }))).execute();
      await trx.updateTable('departments').set({ routing: 'least_loaded', return_after_minutes: 10 }).where('id', '=', departmentId).execute();
      // A was given it 30 minutes ago (B busier then, so least loaded chose A).
      await trx
        .insertInto('conversations')
        .values({ id: conversationId, tenant_id: t.tenantId, status: 'assigned', assigned_user_id: a, department_id: departmentId, last_activity_at: new Date() })
        .execute();
      await sql`update conversations set assigned_at = now() - interval '30 minutes' where id = ${conversationId}`.execute(trx);
    });
    const presence = new FakePresence();
    presence.online.add(a);
    presence.online.add(b);
    const bus = new EventBus();
    const instances = [0, 1].map(() => new RoutingService({ database, bus, presence }));
    const message = (sender_type: 'visitor' | 'user', minutesAgo: number, sender_id: string | null = null, internal = false) =>
      database.withTenant(t.tenantId, (trx) =>
        trx
          .insertInto('messages')
          .values({
            id: newId('message'),
            tenant_id: t.tenantId,
            conversation_id: conversationId,
            sender_type,
            sender_id,
            type: internal ? 'note' : 'text',
            internal,
            content: 'x',
            created_at: new Date(Date.now() - minutesAgo * MINUTE),
            sender_name: null,
            sender_avatar_url: null,
          })
          .execute(),
      );
    const conversation = () => database.withTenant(t.tenantId, (trx) => trx.selectFrom('conversations').select(['status', 'assigned_user_id', 'returned_from_user_id']).where('id', '=', conversationId).executeTakeFirstOrThrow());
    return { t, a, b, departmentId, conversationId, instances, message, conversation };
  }

  it('an unanswered visitor message past the timer moves the conversation exactly once (two instances at once), to B, with a notice and an event A receives', async () => {
    const s = await scene();
    await s.message('user', 20, s.a);
    await s.message('visitor', 12);
    await s.message('visitor', 5);
    // A note is not an answer.
    await s.message('user', 3, s.a, true);
    const moved = await Promise.all(s.instances.map((i) => i.returnExpired()));
    expect(moved.reduce((x, y) => x + y), 'moved once in all').to.equal(1);
    // The move's event woke routing on the bus; B is the only one it may go to now.
    await Promise.all(s.instances.map((i) => i.wake(s.t.tenantId)));
    expect(await s.conversation()).to.deep.equal({ status: 'assigned', assigned_user_id: s.b, returned_from_user_id: s.a });
    const notices = (await messagesOf(s.t, s.conversationId)).filter((m) => m.content === RETURN_NOTICE);
    expect(notices).to.have.length(1);
    const assigned = (await eventsOf(s.t, s.conversationId)).filter((e) => e.type === 'conversation.assigned');
    expect(assigned.map((e) => [e.data, e.recipients])).to.deep.equal([
      [{ conversation_id: s.conversationId, assigned_user_id: null, previous_assigned_user_id: s.a, by: 'return_timer' }, [s.a]],
      [{ conversation_id: s.conversationId, assigned_user_id: s.b, previous_assigned_user_id: null, by: 'routing' }, [s.b]],
    ]);
    // conversation.returned (A addressed too) and conversation.queued, each once; the visitor has waited since their first unanswered message.
    const events = await eventsOf(s.t, s.conversationId);
    const waitingSince = (events.find((e) => e.type === 'conversation.returned')!.data as { waiting_since: string }).waiting_since;
    expect(Date.now() - new Date(waitingSince).getTime()).to.be.within(12 * MINUTE - 5_000, 12 * MINUTE + 60_000);
    expect(events.filter((e) => e.type === 'conversation.returned').map((e) => [e.data, e.recipients])).to.deep.equal([
      [{ conversation_id: s.conversationId, previous_assigned_user_id: s.a, department_id: s.departmentId, return_after_minutes: 10, waiting_since: waitingSince }, [s.a]],
    ]);
    expect(events.filter((e) => e.type === 'conversation.queued').map((e) => e.data)).to.deep.equal([
      { conversation_id: s.conversationId, department_id: s.departmentId, reason: 'returned', queue_position: 1, waiting_since: waitingSince },
    ]);
    // B has it since just now: nothing more moves.
    expect(await s.instances[0]!.returnExpired()).to.equal(0);
  });

  it('never moves one the agent answered in time, nor one whose wait (from the assignment at the earliest) is under the timer', async () => {
    const s = await scene();
    await s.message('visitor', 15);
    await s.message('user', 12, s.a);
    await s.message('visitor', 4);
    expect(await s.instances[0]!.returnExpired()).to.equal(0);
    expect((await s.conversation()).assigned_user_id).to.equal(s.a);
    // An old unanswered message counts from when A got it: assigned 5 minutes ago is not yet 10.
    const { database } = await getHarness();
    await database.withTenant(s.t.tenantId, (trx) => sql`update conversations set assigned_at = now() - interval '5 minutes' where id = ${s.conversationId}`.execute(trx));
    await s.message('visitor', 60);
    expect(await s.instances[0]!.returnExpired()).to.equal(0);
  });

  it('keeps nothing in memory: after a restart (a new service, the old one never ran) the expired conversation is moved', async () => {
    const s = await scene();
    await s.message('visitor', 11);
    // The instance that should have moved it died before it could; another, started afterwards, does it.
    const { database } = await getHarness();
    const restarted = new RoutingService({ database, bus: new EventBus(), presence: new FakePresence() });
    expect(await restarted.returnExpired()).to.equal(1);
    expect(await s.conversation()).to.deep.include({ status: 'open', assigned_user_id: null, returned_from_user_id: s.a });
  });
});
