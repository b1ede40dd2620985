import { expect } from 'chai';
import { RedisSessionChanges, SessionCache, type SessionState } from '../../src/auth/session-cache.ts';
import { openRedis } from '../../src/redis/link.ts';

const live: SessionState = { sessionLive: true, membership: { role: 'agent', seat: 'full' } };

describe('the session cache', () => {
  it('answers a live login from memory until a change evicts it, and never keeps a refusal', async () => {
    const cache = new SessionCache();
    let loads = 0;
    const load = async () => {
      loads++;
      return live;
    };
    await cache.lookup('tn', 'usr', 'ses', load);
    await cache.lookup('tn', 'usr', 'ses', load);
    expect(loads).to.equal(1);
    cache.changed({ sessionId: 'ses' });
    await cache.lookup('tn', 'usr', 'ses', load);
    expect(loads).to.equal(2);
    cache.changed({ userId: 'usr', tenantId: 'other' });
    await cache.lookup('tn', 'usr', 'ses', load);
    expect(loads, 'a change in another tenant keeps this one').to.equal(2);
    cache.changed({ userId: 'usr' });
    await cache.lookup('tn', 'usr', 'ses', load);
    expect(loads).to.equal(3);
    let refusals = 0;
    const refused = async () => {
      refusals++;
      return { sessionLive: false, membership: undefined };
    };
    await cache.lookup('tn', 'usr', 'gone', refused);
    await cache.lookup('tn', 'usr', 'gone', refused);
    expect(refusals).to.equal(2);
  });

  it('a lookup that read the login before a change does not store it after the change', async () => {
    const cache = new SessionCache();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = cache.lookup('tn', 'usr', 'ses', async () => {
      await gate;
      return live;
    });
    cache.changed({ sessionId: 'ses' });
    release();
    await slow;
    let loads = 0;
    await cache.lookup('tn', 'usr', 'ses', async () => {
      loads++;
      return live;
    });
    expect(loads).to.equal(1);
  });

  it('a change on one instance evicts on the others, through Redis', async function () {
    if (!process.env.REDIS_URL) this.skip();
    const redisA = await openRedis(process.env.REDIS_URL, { timeoutMs: 1000, onError: () => undefined });
    const redisB = await openRedis(process.env.REDIS_URL, { timeoutMs: 1000, onError: () => undefined });
    const a = new SessionCache(await RedisSessionChanges.create(redisA, () => undefined));
    const b = new SessionCache(await RedisSessionChanges.create(redisB, () => undefined));
    try {
      let loads = 0;
      const load = async () => {
        loads++;
        return live;
      };
      await b.lookup('tn', 'usr', 'ses-redis', load);
      const evicted = new Promise<void>((resolve) => b.onChange(() => resolve()));
      a.changed({ sessionId: 'ses-redis' });
      await evicted;
      await b.lookup('tn', 'usr', 'ses-redis', load);
      expect(loads).to.equal(2);
    } finally {
      await a.close();
      await b.close();
      redisA.close();
      redisB.close();
    }
  });
});
