import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { createClient, type RedisClientType } from 'redis';
import { type ConnectionStatus, MemoryPresenceTracker, RedisPresenceTracker } from '../../src/realtime/presence-tracker.ts';
import { RedisLink } from '../../src/redis/link.ts';

// The Redis tracker is what several instances share; the in-memory one is what a single instance keeps.
// Two Redis trackers (two instances) driven by the same steps must answer what one in-memory tracker
// holding every connection answers.
describe('presence tracker on Redis', function () {
  this.timeout(60_000);
  let redis: RedisClientType;
  let link: RedisLink;

  before(async function () {
    if (!process.env.REDIS_URL) this.skip();
    redis = createClient({ url: process.env.REDIS_URL }) as RedisClientType;
    await redis.connect();
    link = new RedisLink(redis, { timeoutMs: 5_000 });
  });
  after(async () => {
    await redis?.quit();
  });

  type Step =
    | { kind: 'set'; instance: number; subject: number; connection: number; status: ConnectionStatus }
    | { kind: 'remove'; instance: number; subject: number; connection: number }
    | { kind: 'refresh'; instance: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      kind: fc.constant('set' as const),
      instance: fc.nat(1),
      subject: fc.nat(2),
      connection: fc.nat(3),
      status: fc.constantFrom<ConnectionStatus>('online', 'away'),
    }),
    fc.record({ kind: fc.constant('remove' as const), instance: fc.nat(1), subject: fc.nat(2), connection: fc.nat(3) }),
    fc.record({ kind: fc.constant('refresh' as const), instance: fc.nat(1) }),
  );

  it('two instances sharing Redis answer every change and read as one tracker holding all connections does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const tenantId = `tn_${randomUUID()}`;
        const subjects = ['usr_a', 'usr_b', 'vis_c'];
        const instances = [new RedisPresenceTracker(link), new RedisPresenceTracker(link)];
        const model = new MemoryPresenceTracker();
        // What each instance holds, as its gateway would: the subject and status of each open connection.
        const open = instances.map(() => new Map<string, { subject: string; status: ConnectionStatus }>());
        for (const s of steps) {
          if (s.kind === 'refresh') {
            await instances[s.instance]!.refresh([...open[s.instance]!].map(([connectionId, c]) => ({ tenantId, connectionId, ...c })));
          } else {
            // A connection belongs to one subject for its life, as a socket does.
            const connectionId = `conn-${s.subject}-${s.connection}`;
            const subject = subjects[s.subject]!;
            const modelId = `${s.instance}/${connectionId}`;
            const [got, want] =
              s.kind === 'set'
                ? [await instances[s.instance]!.set(tenantId, subject, connectionId, s.status), await model.set(tenantId, subject, modelId, s.status)]
                : [await instances[s.instance]!.remove(tenantId, subject, connectionId), await model.remove(tenantId, subject, modelId)];
            expect(got, JSON.stringify(s)).to.deep.equal(want);
            if (s.kind === 'set') open[s.instance]!.set(connectionId, { subject, status: s.status });
            else open[s.instance]!.delete(connectionId);
          }
          for (const tracker of instances) {
            expect(await tracker.presenceOf(tenantId, subjects)).to.deep.equal(await model.presenceOf(tenantId, subjects));
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("an instance that died stops counting once its connections' time is up, and they leave the set", async () => {
    const tenantId = `tn_${randomUUID()}`;
    const alive = new RedisPresenceTracker(link);
    // What an instance that died left: a connection whose time ran out a second ago.
    await redis.zAdd(`chat:presence:${tenantId}:usr_a:online`, { score: Date.now() - 1000, value: 'dead-instance:c1' });
    expect(await alive.presenceOf(tenantId, ['usr_a'])).to.deep.equal(new Map([['usr_a', 'offline']]));
    expect(await alive.set(tenantId, 'usr_a', 'c2', 'online')).to.deep.equal({ before: 'offline', after: 'online' });
    // The live instance's write dropped the dead one's connection from the set.
    expect(await redis.zCard(`chat:presence:${tenantId}:usr_a:online`)).to.equal(1);
    expect(await alive.remove(tenantId, 'usr_a', 'c2')).to.deep.equal({ before: 'online', after: 'offline' });
  });

  it('a heartbeat of many connections refreshes them all and drops what died in the sets it keeps', async () => {
    const tenantId = `tn_${randomUUID()}`;
    const alive = new RedisPresenceTracker(link);
    await redis.zAdd(`chat:presence:${tenantId}:usr_a:away`, { score: Date.now() - 1000, value: 'dead-instance:gone' });
    const entries = Array.from({ length: 2500 }, (_, i) => ({ tenantId, subject: `usr_${i % 3 === 0 ? 'a' : i}`, connectionId: `c${i}`, status: 'away' as const }));
    await alive.refresh(entries);
    const presence = await alive.presenceOf(tenantId, ['usr_a', 'usr_1', 'usr_2498', 'usr_nobody']);
    expect([...presence]).to.deep.equal([
      ['usr_a', 'away'],
      ['usr_1', 'away'],
      ['usr_2498', 'away'],
      ['usr_nobody', 'offline'],
    ]);
    expect(await redis.zCard(`chat:presence:${tenantId}:usr_a:away`)).to.equal(entries.filter((e) => e.subject === 'usr_a').length);
    expect(await redis.pTTL(`chat:presence:${tenantId}:usr_2498:away`)).to.be.greaterThan(0);
  });

  it("a socket that closes or changes status during a heartbeat's refresh is not put back as it was", async () => {
    const tenantId = `tn_${randomUUID()}`;
    const tracker = new RedisPresenceTracker(link);
    // Three batches of a thousand; the two connections that change are in the last one.
    const entries = Array.from({ length: 2500 }, (_, i) => ({ tenantId, subject: `usr_${i}`, connectionId: `c${i}`, status: 'online' as const }));
    for (const e of entries.filter((_, i) => i >= 2498)) await tracker.set(tenantId, e.subject, e.connectionId, 'online');
    // As the heartbeat runs: the snapshot is taken, the refresh starts, and meanwhile one socket closes
    // and another goes away (each handled as it happens, not after the refresh).
    const refreshed = tracker.refresh(entries);
    const closed = tracker.remove(tenantId, 'usr_2498', 'c2498');
    const away = tracker.set(tenantId, 'usr_2499', 'c2499', 'away');
    await Promise.all([refreshed, closed, away]);
    expect(await closed).to.deep.equal({ before: 'online', after: 'offline' });
    expect(await away).to.deep.equal({ before: 'online', after: 'away' });
    expect([...(await tracker.presenceOf(tenantId, ['usr_2497', 'usr_2498', 'usr_2499']))]).to.deep.equal([
      ['usr_2497', 'online'],
      ['usr_2498', 'offline'],
      ['usr_2499', 'away'],
    ]);
  });
});
