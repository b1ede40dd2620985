import { expect } from 'chai';
import fc from 'fast-check';
import * as repo from '../../src/conversations/conversation.repository.ts';
import type { Database } from '../../src/db/database.ts';
import { newId, newUuid } from '../../src/shared/ids.ts';
import { addMember, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';

// The counter rows (conversation_counts) are kept by a trigger on conversations; these tests change
// conversations the ways the service and the database do, then compare every combination of the counted
// filters with a real count.

interface World {
  tenant: TestTenant;
  users: string[];
  departments: string[];
}

async function world(database: Database): Promise<World> {
  const tenant = await createTenant();
  const users = [(await addMember(tenant)).userId, (await addMember(tenant)).userId];
  const departments = [newUuid(), newUuid()];
  await database.withTenant(tenant.tenantId, (trx) =>
    trx
      .insertInto('departments')
      .values(departments.map((id, i) => ({ id, tenant_id: tenant.tenantId, name: `D${i}` })))
      .execute(),
  );
  return { tenant, users, departments };
}

type Op =
  | { kind: 'create'; department: number | null }
  | { kind: 'assign'; pick: number; user: number }
  | { kind: 'transfer'; pick: number; user: number; department: number }
  | { kind: 'close'; pick: number }
  | { kind: 'reopen'; pick: number }
  | { kind: 'delete'; pick: number }
  | { kind: 'release'; user: number }
  | { kind: 'dropDepartment'; department: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), department: fc.option(fc.nat(1), { nil: null }) }),
  fc.record({ kind: fc.constant('assign' as const), pick: fc.nat(), user: fc.nat(1) }),
  fc.record({ kind: fc.constant('transfer' as const), pick: fc.nat(), user: fc.nat(1), department: fc.nat(1) }),
  fc.record({ kind: fc.constant('close' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reopen' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('release' as const), user: fc.nat(1) }),
  fc.record({ kind: fc.constant('dropDepartment' as const), department: fc.nat(1) }),
);

/** Applies one change as the service (or the database's ON DELETE SET NULL) would make it. */
async function apply(database: Database, w: World, op: Op) {
  const tenantId = w.tenant.tenantId;
  const now = new Date();
  await database.withTenant(tenantId, async (trx) => {
    const ids = (await trx.selectFrom('conversations').select(['id', 'status']).orderBy('id').execute());
    const picked = 'pick' in op && ids.length > 0 ? ids[op.pick % ids.length] : undefined;
    switch (op.kind) {
      case 'create':
        await repo.insertConversation(trx, {
          id: newId('conversation'),
          tenant_id: tenantId,
          status: 'open',
          priority: 'normal',
          subject: null,
          visitor_id: null,
          contact_id: null,
          department_id: op.department === null ? null : (w.departments[op.department] ?? null),
          assigned_user_id: null,
          now,
        });
        return;
      case 'assign':
        if (picked && picked.status !== 'closed') await repo.updateConversation(trx, picked.id, { status: 'assigned', assigned_user_id: w.users[op.user]! }, now);
        return;
      case 'transfer':
        if (picked && picked.status !== 'closed') {
          await repo.updateConversation(trx, picked.id, { status: 'assigned', assigned_user_id: w.users[op.user]!, department_id: w.departments[op.department]! }, now);
        }
        return;
      case 'close':
        if (picked && picked.status !== 'closed') await repo.updateConversation(trx, picked.id, { status: 'closed', closed_at: now }, now);
        return;
      case 'reopen':
        if (picked && picked.status === 'closed') await repo.updateConversation(trx, picked.id, { status: 'open', assigned_user_id: null, closed_at: null }, now);
        return;
      case 'delete':
        if (picked) await trx.deleteFrom('conversations').where('id', '=', picked.id).execute();
        return;
      case 'release':
        await repo.releaseConversationsOf(trx, w.users[op.user]!, now);
        return;
      case 'dropDepartment': {
        // ON DELETE SET NULL moves its conversations to "no department": the trigger sees that update too.
        const id = w.departments[op.department]!;
        await trx.deleteFrom('departments').where('id', '=', id).execute();
        await trx.insertInto('departments').values({ id, tenant_id: tenantId, name: `D${op.department}` }).execute();
        return;
      }
    }
  });
}

/** Every combination of the counted filters: the counters' sum and a real count. */
async function compareAll(database: Database, w: World) {
  const statuses = [undefined, 'open', 'assigned', 'closed'] as const;
  const assignees = [undefined, null, ...w.users];
  const departments = [undefined, ...w.departments];
  return database.withTenant(w.tenant.tenantId, async (trx) => {
    const mismatches: string[] = [];
    for (const status of statuses) {
      for (const assignedUserId of assignees) {
        for (const departmentId of departments) {
          const filters: repo.CountedFilters = {
            ...(status ? { status } : {}),
            ...(assignedUserId !== undefined ? { assignedUserId } : {}),
            ...(departmentId ? { departmentId } : {}),
          };
          const kept = await repo.countFromCounters(trx, filters);
          const { total } = await repo.countConversations(trx, filters);
          if (kept !== total) mismatches.push(`${JSON.stringify(filters)}: counters ${kept}, rows ${total}`);
          // The list page of the same filters (one prepared statement per shape, given these values): the
          // same rows, each matching, and the counters' total with them.
          const page = await repo.listConversations(trx, w.tenant.owner.userId, filters, { limit: 100, offset: 0 }, filters);
          const wrong = page.rows.filter(
            (r) =>
              (status && r.status !== status) ||
              (assignedUserId !== undefined && r.assigned_user_id !== assignedUserId) ||
              (departmentId && r.department_id !== departmentId),
          );
          if (page.rows.length !== total || wrong.length > 0 || (total > 0 && page.total !== total)) {
            mismatches.push(`${JSON.stringify(filters)}: listed ${page.rows.length} (${wrong.length} not matching, total ${page.total}), rows ${total}`);
          }
        }
      }
    }
    return mismatches;
  });
}

describe('conversation counts', () => {
  it('equal a real count for every combination of status, assignee and department after any sequence of changes', async function () {
    this.timeout(120_000);
    const { database } = await getHarness();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const w = await world(database);
        for (const op of ops) await apply(database, w, op);
        expect(await compareAll(database, w)).to.deep.equal([]);
      }),
      { numRuns: 20 },
    );
  });

  it('stay exact under concurrent changes to one tenant, without deadlocks', async function () {
    this.timeout(60_000);
    const { database } = await getHarness();
    const w = await world(database);
    // Every worker moves its own conversations through the same few combinations at the same time, in
    // opposite directions half of the time: the counter rows they share are where they would collide.
    const worker = async (i: number) => {
      const id = newId('conversation');
      const now = new Date();
      await database.withTenant(w.tenant.tenantId, (trx) =>
        repo.insertConversation(trx, {
          id,
          tenant_id: w.tenant.tenantId,
          status: 'open',
          priority: 'normal',
          subject: null,
          visitor_id: null,
          contact_id: null,
          department_id: w.departments[i % 2]!,
          assigned_user_id: null,
          now,
        }),
      );
      // One change per transaction, as a request makes it: the counter rows it touches are locked in key order.
      const change = (changes: Parameters<typeof repo.updateConversation>[2]) =>
        database.withTenant(w.tenant.tenantId, (trx) => repo.updateConversation(trx, id, changes, now));
      for (let round = 0; round < 4; round++) {
        await change({ status: 'assigned', assigned_user_id: w.users[(i + round) % 2]!, department_id: w.departments[(i + round + 1) % 2]! });
        await change({ status: 'closed', closed_at: now });
        if (round < 3) await change({ status: 'open', assigned_user_id: null, closed_at: null });
      }
    };
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => worker(i)));
    expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).to.deep.equal([]);
    expect(await compareAll(database, w)).to.deep.equal([]);
    const byStatus = await database.withTenant(w.tenant.tenantId, (trx) => repo.countFromCounters(trx, { status: 'closed' }));
    expect(byStatus).to.equal(40);
  });
});
