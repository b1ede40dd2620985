import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import type { StoredEvent } from '../../src/events/outbox.ts';
import { TenantInterest } from '../../src/events/tenant-interest.ts';
import { tenantsWithEnabledWebhooks } from '../../src/webhooks/webhook.repository.ts';
import { createConversation, createTenant } from '../support/factories.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { getHarness } from '../support/harness.ts';
import { startReceiver } from '../support/webhook-receiver.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const eventOf = (tenantId: string) => ({ envelope: { tenant_id: tenantId } }) as StoredEvent;

/** A load that answers when told to. */
function controlledLoad() {
  const pending: ((tenants: string[]) => void)[] = [];
  return {
    load: () => new Promise<string[]>((resolve) => pending.push(resolve)),
    answer: (tenants: string[]) => pending.shift()!(tenants),
    get waiting() {
      return pending.length;
    },
  };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('tenant interest (which commits wake a reader of the feed)', () => {
  it('counts every tenant until the first load answers, then only the tenants it read', async () => {
    const loads = controlledLoad();
    const interest = new TenantInterest(loads.load, { refreshMs: 3_600_000 });
    interest.start();
    try {
      expect(interest.covers([eventOf('tn_a')])).to.equal(true);
      expect(interest.coversTenants(['tn_b'])).to.equal(true);
      loads.answer(['tn_a']);
      await settled();
      expect(interest.covers([eventOf('tn_a')])).to.equal(true);
      expect(interest.covers([eventOf('tn_b')])).to.equal(false);
      expect(interest.covers([eventOf('tn_b'), eventOf('tn_a')])).to.equal(true);
      // As other instances' wake-ups name them.
      expect(interest.coversTenants(['tn_b'])).to.equal(false);
      expect(interest.coversTenants(['tn_b', 'tn_a'])).to.equal(true);
      expect(interest.coversTenants([])).to.equal(false);
    } finally {
      void interest.stop();
    }
  });

  it('stop waits for the loads under way and starts none after it (the service closes the database next)', async () => {
    const loads = controlledLoad();
    const errors: unknown[] = [];
    const interest = new TenantInterest(loads.load, { refreshMs: 3_600_000, onError: (err) => errors.push(err) });
    interest.start();
    interest.changed();
    expect(loads.waiting).to.equal(2);
    let stopped = false;
    const stopping = interest.stop().then(() => (stopped = true));
    await settled();
    expect(stopped, 'stopped while a load was still under way').to.equal(false);
    loads.answer(['tn_a']);
    await settled();
    expect(stopped).to.equal(false);
    loads.answer(['tn_a']);
    await stopping;
    interest.changed();
    expect(loads.waiting, 'a load started after stop').to.equal(0);
    expect(errors).to.deep.equal([]);
  });

  it('after a change, counts every tenant until a load that began after it answers; a load begun before it is dropped', async () => {
    const loads = controlledLoad();
    const interest = new TenantInterest(loads.load, { refreshMs: 3_600_000 });
    interest.start();
    try {
      loads.answer([]);
      await settled();
      expect(interest.covers([eventOf('tn_new')])).to.equal(false);
      // A change starts a load; a second change comes while it runs (it may have read too early)...
      interest.changed();
      expect(loads.waiting).to.equal(1);
      expect(interest.covers([eventOf('tn_new')])).to.equal(true);
      interest.changed();
      expect(loads.waiting).to.equal(2);
      // ...so the first load's answer is not installed, the second's is.
      loads.answer([]);
      await settled();
      expect(interest.covers([eventOf('tn_new')])).to.equal(true);
      loads.answer(['tn_new']);
      await settled();
      expect(interest.covers([eventOf('tn_new')])).to.equal(true);
      expect(interest.covers([eventOf('tn_other')])).to.equal(false);
    } finally {
      void interest.stop();
    }
  });

  it('a load that fails (the database away) makes every tenant count', async () => {
    let fail = false;
    const errors: unknown[] = [];
    const interest = new TenantInterest(async () => {
      if (fail) throw new Error('database away');
      return [];
    }, { refreshMs: 3_600_000, onError: (err) => errors.push(err) });
    interest.start();
    try {
      await settled();
      expect(interest.covers([eventOf('tn_a')])).to.equal(false);
      fail = true;
      interest.changed();
      await settled();
      expect(errors).to.have.length(1);
      expect(interest.covers([eventOf('tn_a')])).to.equal(true);
    } finally {
      void interest.stop();
    }
  });

  it('the webhook dispatcher reads the feed for a tenant with an endpoint at once, and not for a commit of a tenant without one', async () => {
    const h = await getHarness();
    const bus = new EventBus();
    const { app, services } = buildApp({ ...h.deps, bus });
    const interest = new TenantInterest(() => h.database.asSystem(tenantsWithEnabledWebhooks), { refreshMs: 3_600_000 });
    services.webhooks.onEndpointsChanged(() => interest.changed());
    const r = await startReceiver();
    // It polls once an hour: only wakes move it.
    const dispatcher = testDispatcher(h, {
      bus,
      pollMs: 3_600_000,
      interest,
    });
    let reads = 0;
    const fanOutOnce = dispatcher.fanOutOnce.bind(dispatcher);
    dispatcher.fanOutOnce = () => {
      reads++;
      return fanOutOnce();
    };
    try {
      const quiet = await createTenant();
      const busy = await createTenant();
      const quietConv = await createConversation(quiet, {}, quiet.owner.accessToken, app);
      const busyConv = await createConversation(busy, {}, busy.owner.accessToken, app);
      // The cursor exists before the messages (a first pass starts at the head of the feed).
      await dispatcher.fanOutOnce();
      interest.start();
      dispatcher.start();
      const hook = (await request(app).post('/api/v1/webhooks').set(bearer(busy.owner.accessToken)).send({ url: r.url, events: ['message.created'] }).expect(201)).body;
      r.secrets.push(hook.secret);
      const sent = (await request(app).post('/api/v1/messages').set(bearer(busy.owner.accessToken)).send({ conversation_id: busyConv.id, content: 'wakes' }).expect(201)).body;
      await r.until((got) => got.some((d) => d.verified?.data?.message?.id === sent.id && d.answered === 200), 10_000);
      // The endpoint is known now; a commit of a tenant without one wakes nothing.
      await new Promise<void>((resolve, reject) => {
        const started = Date.now();
        const check = () => (!interest.covers([eventOf(quiet.tenantId)]) ? resolve() : Date.now() - started > 5000 ? reject(new Error('interest not loaded')) : setTimeout(check, 10));
        check();
      });
      const before = reads;
      for (let i = 0; i < 5; i++) {
        await request(app).post('/api/v1/messages').set(bearer(quiet.owner.accessToken)).send({ conversation_id: quietConv.id, content: `quiet ${i}` }).expect(201);
      }
      // A sentinel: a message of the tenant with the endpoint is read and delivered after them.
      const last = (await request(app).post('/api/v1/messages').set(bearer(busy.owner.accessToken)).send({ conversation_id: busyConv.id, content: 'sentinel' }).expect(201)).body;
      await r.until((got) => got.some((d) => d.verified?.data?.message?.id === last.id && d.answered === 200), 10_000);
      // Without the interest, each of the five quiet messages would have woken a read (or joined one running).
      expect(reads - before).to.be.at.most(2);
    } finally {
      void interest.stop();
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', '=', r.url).execute());
      await r.close();
    }
  });
});
