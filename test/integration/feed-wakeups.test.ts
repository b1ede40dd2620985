// Which wakes make a reader of the feed (webhooks, workflows, bots) run a pass, a writing transaction: a
// commit relayed from another instance through Redis, and events held back by a running writer, each only
// when they may be the reader's work. On several instances, an unfiltered relay made every send cost each
// other instance a pass per reader.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pino from 'pino';
import { EventBus } from '../../src/events/bus.ts';
import { FeedConsumer } from '../../src/events/feed-consumer.ts';
import type { FeedRow } from '../../src/events/feed.repository.ts';
import { inTenantTransaction, writeEvent } from '../../src/events/outbox.ts';
import { TenantInterest } from '../../src/events/tenant-interest.ts';
import { RedisFeedWakeups } from '../../src/events/wakeups.ts';
import { openRedis, type RedisLink } from '../../src/redis/link.ts';
import { eventually } from '../support/eventually.ts';
import { createConversation, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness, type Harness } from '../support/harness.ts';
import { RedisProcess } from '../support/redis-process.ts';

// A cursor of its own for each reader (the system role deletes no cursor: the rows stay, unread by anything).
const CURSOR_PREFIX = 'test-feed-wakeups-';
const settled = () => new Promise((resolve) => setImmediate(resolve));

const hasRedisServer = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A reader of the feed that counts its passes and keeps what it read; it polls once an hour: only wakes move it. */
class CountingConsumer extends FeedConsumer {
  passes = 0;
  readonly rows: FeedRow[];
  #onRead = new Set<() => void>();

  constructor(h: Harness, o: { interest?: TenantInterest; wakeups?: RedisFeedWakeups }) {
    const read: FeedRow[] = [];
    super({
      database: h.database,
      logger: pino({ level: 'silent' }),
      bus: new EventBus(),
      interest: o.interest,
      wakeups: o.wakeups,
      cursor: `${CURSOR_PREFIX}${randomUUID()}`,
      label: 'test reader',
      pollMs: 3_600_000,
      batch: 100,
      fanOut: async (_trx, rows) => {
        read.push(...rows);
        return 0;
      },
      send: () => undefined,
    });
    this.rows = read;
  }

  override async readOnce(): ReturnType<FeedConsumer['readOnce']> {
    this.passes++;
    try {
      return await super.readOnce();
    } finally {
      for (const wake of this.#onRead) wake();
    }
  }

  /** Resolves once `check` holds, looked at after every pass. */
  until(check: () => boolean, what: string): Promise<true> {
    let wake: (() => void) | undefined;
    return eventually(() => check(), what, { wake: (w) => this.#onRead.add((wake = w)) }).finally(() => wake && this.#onRead.delete(wake));
  }

  read(tenant: TestTenant): FeedRow[] {
    return this.rows.filter((r) => r.tenant_id === tenant.tenantId);
  }
}

/** An interest that knows its tenants once started and settled. */
async function interestIn(tenants: TestTenant[]): Promise<TenantInterest> {
  const interest = new TenantInterest(async () => tenants.map((t) => t.tenantId), { refreshMs: 3_600_000 });
  interest.start();
  await settled();
  return interest;
}

/** A committed event of the tenant, published on the bus as a request's would be. */
const commit = (h: Harness, bus: EventBus, t: TestTenant, conversationId: string) =>
  inTenantTransaction(h.database, bus, t.tenantId, (trx, emit) => emit('conversation.reopened', { conversation_id: conversationId }, { conversationId }));

describe('feed wake-ups: a reader runs a pass only for what may be its work', function () {
  let h: Harness;

  before(async function () {
    h = await getHarness();
  });

  // A redis-server of the tests' own: wake-ups of whatever else runs on the shared one would wake the readers.
  describe('commits relayed from another instance through Redis', function () {
    const redis = new RedisProcess();
    let linkA: RedisLink;
    let linkB: RedisLink;
    let wakeupsA: RedisFeedWakeups;
    let wakeupsB: RedisFeedWakeups;
    /** Instance A's bus: its commits are relayed; B's readers hear them only through Redis. */
    let busA: EventBus;
    let stopRelay: () => void;

    before(async function () {
      if (!hasRedisServer) {
        console.log('    (skipped: redis-server is not installed)');
        return this.skip();
      }
      await redis.start();
      linkA = await openRedis(redis.url, { timeoutMs: 1000, onError: () => undefined });
      linkB = await openRedis(redis.url, { timeoutMs: 1000, onError: () => undefined });
      wakeupsA = await RedisFeedWakeups.create(linkA);
      wakeupsB = await RedisFeedWakeups.create(linkB);
      busA = new EventBus();
      stopRelay = wakeupsA.relay(busA);
    });

    after(async () => {
      stopRelay?.();
      await wakeupsA?.close();
      await wakeupsB?.close();
      linkA?.close();
      linkB?.close();
      await redis.stop();
    });

    const afterThis: (() => void)[] = [];
    afterEach(() => {
      for (const stop of afterThis.splice(0)) stop();
    });

    /** The wake-ups instance B hears, in order (registered after the readers: they have acted on each by then). */
    function hearB(): (readonly string[] | undefined)[] {
      const heard: (readonly string[] | undefined)[] = [];
      const stop = wakeupsB.subscribe((tenantIds) => heard.push(tenantIds));
      afterThis.push(stop);
      return heard;
    }

    it("another instance's commits of a tenant the reader has no work for cost it no pass; one of a tenant it serves wakes it at once", async () => {
      const served = await createTenant();
      const other = await createTenant();
      const servedConv = await createConversation(served);
      const otherConv = await createConversation(other);
      const interest = await interestIn([served]);
      const reader = new CountingConsumer(h, { interest, wakeups: wakeupsB });
      try {
        // The cursor exists before the commits (a first pass starts at the head of the feed).
        await reader.readOnce();
        reader.passes = 0;
        reader.start();
        const heard = hearB();
        for (let i = 0; i < 5; i++) {
          await commit(h, busA, other, otherConv.id);
          await eventually(() => heard.filter((t) => t?.includes(other.tenantId)).length === i + 1, `B hearing commit ${i + 1} of the other tenant`);
        }
        expect(heard.every((t) => t !== undefined && !t.includes(served.tenantId)), 'the wake-ups name their tenant').to.equal(true);
        expect(reader.passes, 'passes for the other tenant').to.equal(0);
        // The sentinel: a commit of the served tenant, and nothing else moves a reader that polls once an hour.
        await commit(h, busA, served, servedConv.id);
        await reader.until(() => reader.read(served).length === 1, "the served tenant's event read");
        expect(reader.read(other)).to.have.length(5);
        expect(reader.passes).to.be.at.most(2);
      } finally {
        interest.stop();
        await reader.stop();
      }
    });

    it('a wake-up naming no tenant (an instance from before the names, news lost while Redis was away, hearing again) wakes every reader', async () => {
      const other = await createTenant();
      const otherConv = await createConversation(other);
      const interest = await interestIn([]);
      const reader = new CountingConsumer(h, { interest, wakeups: wakeupsB });
      try {
        await reader.readOnce();
        reader.passes = 0;
        reader.start();
        const heard = hearB();
        await commit(h, busA, other, otherConv.id);
        await eventually(() => heard.length === 1, 'B hearing the commit');
        expect(reader.passes).to.equal(0);
        // An instance from before the tenant lists sends its id alone.
        await linkA.run((c) => c.publish('chat:webhooks:wake', randomUUID()));
        await reader.until(() => reader.read(other).length === 1, 'the commit read after a bare wake-up');
        // An announcement of news that may have been lost names no tenant either.
        let before = reader.passes;
        wakeupsA.announce();
        await reader.until(() => reader.passes > before, 'a pass after an announcement naming no tenant');
        // B's subscription cut: what was published meanwhile is lost, so hearing again wakes every reader.
        before = reader.passes;
        expect(await redis.killSubscribers()).to.be.greaterThan(0);
        await reader.until(() => reader.passes > before, 'a pass once B hears again');
      } finally {
        interest.stop();
        await reader.stop();
      }
    });

    it('until its interest is known (just after a change on its own instance), any relayed commit wakes the reader', async () => {
      const other = await createTenant();
      const otherConv = await createConversation(other);
      let answering = true;
      // The first load answers no tenant; the one after the change has not answered yet.
      const interest = new TenantInterest(() => (answering ? Promise.resolve([]) : new Promise<string[]>(() => undefined)), { refreshMs: 3_600_000 });
      interest.start();
      await settled();
      const reader = new CountingConsumer(h, { interest, wakeups: wakeupsB });
      try {
        await reader.readOnce();
        reader.start();
        // A webhook, workflow or bot just changed here.
        answering = false;
        interest.changed();
        await commit(h, busA, other, otherConv.id);
        await reader.until(() => reader.read(other).length === 1, "the other tenant's commit read");
      } finally {
        interest.stop();
        await reader.stop();
      }
    });

    it('commits announced in one turn go out as one wake-up naming each of their tenants', async () => {
      const heard = hearB();
      wakeupsA.announce(['tn_one', 'tn_two']);
      wakeupsA.announce(['tn_two', 'tn_three']);
      await eventually(() => heard.length === 1, 'one wake-up');
      expect([...heard[0]!].sort()).to.deep.equal(['tn_one', 'tn_three', 'tn_two']);
      wakeupsA.announce(['tn_one']);
      wakeupsA.announce();
      await eventually(() => heard.length === 2, 'a second wake-up');
      expect(heard[1], 'a turn with news of every tenant names none').to.equal(undefined);
    });
  });

  describe('events held back by a running writer', function () {
    before(function () {
      if (h.database.kind !== 'postgres') {
        console.log('    (skipped: one transaction at a time holds nothing back)');
        this.skip();
      }
    });

    it('are looked for again soon by a reader with work for their tenant, not by one without', async () => {
      const served = await createTenant();
      const other = await createTenant();
      const writer = await createTenant();
      const servedConv = await createConversation(served);
      const otherConv = await createConversation(other);
      const writerConv = await createConversation(writer);
      const interest = await interestIn([served]);
      // Neither reader hears commits: each is moved only by its wake() below and its own looks again.
      const filtered = new CountingConsumer(h, { interest });
      const unfiltered = new CountingConsumer(h, {});
      const quiet = new EventBus();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let slow: Promise<unknown> | undefined;
      try {
        await filtered.readOnce();
        await unfiltered.readOnce();
        // A writer of a third tenant has its transaction id and runs on: every commit after it is held back.
        let written!: () => void;
        const started = new Promise<void>((resolve) => (written = resolve));
        slow = h.database.withTenant(
          writer.tenantId,
          async (trx) => {
            await writeEvent(trx, writer.tenantId, 'conversation.reopened', { conversation_id: writerConv.id }, { conversationId: writerConv.id });
            written();
            await gate;
          },
          { eventWriter: true },
        );
        await started;
        await commit(h, quiet, other, otherConv.id);
        filtered.passes = 0;
        unfiltered.passes = 0;
        filtered.wake();
        unfiltered.wake();
        // The sentinel: the reader without an interest looks again and again while the writer runs.
        await unfiltered.until(() => unfiltered.passes >= 6, 'five looks again by the reader without an interest');
        expect(filtered.passes, "looks at the other tenant's held-back event").to.equal(1);
        expect(filtered.rows).to.have.length(0);
        // An event of the served tenant held back: the reader looks again until the writer is done.
        await commit(h, quiet, served, servedConv.id);
        filtered.wake();
        await filtered.until(() => filtered.passes >= 3, 'two looks again at the served held-back event');
        expect(filtered.rows).to.have.length(0);
        // The writer commits (its tenant's commit wakes nobody here); the next look reads everything.
        release();
        await slow;
        await filtered.until(() => filtered.read(served).length === 1, "the served tenant's event read");
        expect(filtered.read(other)).to.have.length(1);
        expect(filtered.read(writer)).to.have.length(1);
      } finally {
        release();
        await slow;
        interest.stop();
        await filtered.stop();
        await unfiltered.stop();
      }
    });
  });
});
