// The rule that no request waits on Redis past its budget, tried on a redis-server of the test's own:
// paused (it answers nothing while connections stay open) and stopped.
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import request from 'supertest';
import { resilientStoreFactory } from '../../src/http/rate-limit.ts';
import { RedisFanout } from '../../src/realtime/fanout.ts';
import { RedisTicketStore } from '../../src/realtime/tickets.ts';
import { openRedis, type RedisLink, RedisUnavailableError } from '../../src/redis/link.ts';
import { eventually } from '../support/eventually.ts';
import { createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { RedisProcess } from '../support/redis-process.ts';

const hasRedisServer = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const elapsed = async <T>(run: () => Promise<T>): Promise<{ ms: number; outcome: T | unknown }> => {
  const started = performance.now();
  const outcome = await run().catch((err: unknown) => err);
  return { ms: performance.now() - started, outcome };
};

describe('Redis within a budget', function () {
  const redis = new RedisProcess();
  let link: RedisLink;

  before(async function () {
    if (!hasRedisServer) {
      console.log('    (skipped: redis-server is not installed)');
      return this.skip();
    }
    await redis.start();
    link = await openRedis(redis.url, { timeoutMs: 50, breakMs: 300, onError: () => undefined });
  });

  after(async () => {
    link?.close();
    await redis.stop();
  });

  it('a command Redis does not answer fails after the budget, the next ones fail at once for a while, then work again', async () => {
    await redis.pause(600);
    const first = await elapsed(() => link.run((c) => c.ping()));
    expect(first.outcome).to.be.instanceOf(RedisUnavailableError);
    expect(first.ms, 'waited about the budget').to.be.within(45, 400);
    expect(link.up).to.equal(false);
    const next = await elapsed(() => link.run((c) => c.ping()));
    expect(next.outcome).to.be.instanceOf(RedisUnavailableError);
    expect(next.ms, 'refused without a round trip').to.be.below(20);
    // Once Redis answers again and the pause of the breaker is over, commands go through.
    let answer: unknown;
    for (let i = 0; i < 100 && answer !== 'PONG'; i++) answer = await link.run((c) => c.ping()).catch(() => new Promise((r) => setTimeout(r, 50)));
    expect(answer).to.equal('PONG');
  });

  it('an answer that arrived while the event loop was busy past the budget counts as an answer', async () => {
    const pending = link.run((c) => c.ping());
    // Busy for four budgets: the reply is in the socket's buffer when the timer fires.
    const until = performance.now() + 200;
    while (performance.now() < until) {
      // spinning on purpose
    }
    expect(await pending).to.equal('PONG');
    expect(link.up).to.equal(true);
  });

  it('with Redis paused, a request answers at once with its budget counted in memory; a ticket answers 503 with Retry-After; readiness says Redis is down', async () => {
    const h = await getHarness();
    const app = h.appWith(
      {},
      {
        redis: link,
        rateLimitStore: resilientStoreFactory((...args: string[]) => link.run((c) => c.sendCommand(args)), `test-${Date.now()}`),
        tickets: new RedisTicketStore(link),
      },
    );
    const t = await createTenant();
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    // The tests before paused Redis on purpose: ready once its link answers again (a spell of failing at once may still run).
    await eventually(async () => (await request(app).get('/api/ready').expect(200)).body.checks.redis === 'ok', 'readiness to say Redis is ok', { timeoutMs: 5_000 });
    await request(app).post('/api/v1/ws/tickets').set(auth).expect(201);

    await redis.pause(1_500);
    const started = performance.now();
    const list = await request(app).get('/api/v1/conversations').set(auth).expect(200);
    expect(list.headers['ratelimit'], 'counted, in memory').to.match(/^"requests"; r=\d+; t=\d+$/);
    const ticket = await request(app).post('/api/v1/ws/tickets').set(auth);
    expectProblem(ticket, 503, 'ERR_UNAVAILABLE');
    expect(Number(ticket.headers['retry-after'])).to.be.greaterThan(0);
    expect((await request(app).get('/api/ready').expect(200)).body.checks).to.deep.equal({ database: 'ok', redis: 'down' });
    expect(performance.now() - started, 'three requests while Redis answers nothing').to.be.below(1_000);
  });

  it('news that could not be published while commands failed at once goes out when that spell ends, with no reconnection', async () => {
    const other = await openRedis(redis.url, { timeoutMs: 50, breakMs: 300, onError: () => undefined });
    const sender = await RedisFanout.create(link, { pollMs: 250 });
    const receiver = await RedisFanout.create(other, { pollMs: 250 });
    try {
      const heard: string[] = [];
      await receiver.subscribe({ onNotify: (tenantId) => heard.push(tenantId), onLive: () => undefined });
      // A command Redis does not answer in time: the next ones fail at once, without reaching Redis.
      await redis.pause(200);
      expect(await link.run((c) => c.ping()).catch((err: unknown) => err)).to.be.instanceOf(RedisUnavailableError);
      sender.notifyOthers(['tenant-during-the-break']);
      expect(link.up, 'still failing at once').to.equal(false);
      await eventually(() => heard.includes('tenant-during-the-break'), 'the news to reach the other instance after the break', { timeoutMs: 3_000 });
    } finally {
      await sender.close();
      await receiver.close();
      other.close();
    }
  });

  it('with Redis stopped, commands fail at once', async () => {
    await redis.stop();
    try {
      const { ms, outcome } = await elapsed(() => link.run((c) => c.ping()));
      expect(outcome).to.be.instanceOf(RedisUnavailableError);
      expect(ms).to.be.below(20);
    } finally {
      await redis.start();
    }
  });
});
