import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import fc from 'fast-check';
import type { Express } from 'express';
import { sql } from 'kysely';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { EventBus } from '../../src/events/bus.ts';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';
import { claimDueDeliveries } from '../../src/webhooks/webhook.repository.ts';
import { RedisFeedWakeups } from '../../src/events/wakeups.ts';
import { openRedis } from '../../src/redis/link.ts';
import { urlRefusal } from '../../src/webhooks/webhook.service.ts';
import { AddressRefused, type Resolver, addressRefusal, createTransport, filteringLookup, signature } from '../../src/delivery/transport.ts';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { type TestTenant, addMember, createConversation, createTenant, login } from '../support/factories.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { type Harness, getHarness, sentMail } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const TIMEOUT_MS = 400;

describe('webhooks', () => {
  let h: Harness;
  let app: Express;
  let bus: EventBus;
  let dispatcher: WebhookDispatcher;
  const receivers: Receiver[] = [];

  before(async () => {
    h = await getHarness();
    bus = new EventBus();
    const built = buildApp({ ...h.deps, bus });
    app = built.app;
    // Retries after 50 to 250 ms instead of seconds to hours; a hanging receiver gives up after 400 ms.
    dispatcher = testDispatcher(h, {
      bus,
      timeoutMs: TIMEOUT_MS,
      retryDelaysMs: [50, 100, 150, 200, 250],
      pollMs: 50,
    });
    built.services.webhooks.onDeliveryDue(() => dispatcher.wake());
    dispatcher.start();
  });

  after(async () => {
    await dispatcher.stop();
    // On a shared PostgreSQL database, endpoints left behind would retry towards ports other tests reuse.
    const ids = (await h.database.asSystem((trx) => trx.selectFrom('webhooks').select('id').where('url', 'like', 'http://127.0.0.1:%').execute())).map((w) => w.id);
    if (ids.length > 0) await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('id', 'in', ids).execute());
    for (const r of receivers.splice(0)) await r.close();
  });

  async function receiver(options: Parameters<typeof startReceiver>[0] = {}) {
    const r = await startReceiver(options);
    receivers.push(r);
    return r;
  }

  async function createWebhook(t: TestTenant, r: Receiver, events: string[] = ['*']) {
    const res = await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: r.url, events }).expect(201);
    r.secrets.push(res.body.secret);
    return res.body as { id: string; secret: string };
  }

  const deliveries = async (t: TestTenant, webhookId: string, query = '') =>
    (await request(app).get(`/api/v1/webhooks/${webhookId}/deliveries?limit=100${query}`).set(bearer(t.owner.accessToken)).expect(200)).body
      .data as Record<string, any>[];

  const feedEvents = async (t: TestTenant) =>
    (await request(app).get('/api/v1/events?limit=100').set(bearer(t.owner.accessToken)).expect(200)).body.data as Record<string, any>[];

  describe('the endpoints', () => {
    it('create answers the secret once; get, list, update and delete manage the endpoint', async () => {
      const t = await createTenant();
      const auth = bearer(t.owner.accessToken);
      const created = await request(app)
        .post('/api/v1/webhooks')
        .set(auth)
        .send({ url: 'https://hooks.example.com/chat', events: ['message.created', 'conversation.created'], description: 'CRM' })
        .expect(201);
      expect(created.body.id).to.match(/^whk_/);
      expect(created.body.secret).to.match(/^whsec_[A-Za-z0-9+/=]{32}$/);
      expect(created.body).to.include({ enabled: true, disabled_reason: null, description: 'CRM' });
      const got = await request(app).get(`/api/v1/webhooks/${created.body.id}`).set(auth).expect(200);
      expect(got.body).to.not.have.property('secret');
      const list = await request(app).get('/api/v1/webhooks').set(auth).expect(200);
      expect(list.body.data.map((w: { id: string }) => w.id)).to.deep.equal([created.body.id]);
      const updated = await request(app).patch(`/api/v1/webhooks/${created.body.id}`).set(auth).send({ events: ['*', 'message.created'], enabled: false }).expect(200);
      expect(updated.body).to.include({ enabled: false, disabled_reason: 'manual' });
      expect(updated.body.events).to.deep.equal(['*']);
      const enabled = await request(app).patch(`/api/v1/webhooks/${created.body.id}`).set(auth).send({ enabled: true }).expect(200);
      expect(enabled.body).to.include({ enabled: true, disabled_reason: null, disabled_at: null });
      await request(app).delete(`/api/v1/webhooks/${created.body.id}`).set(auth).expect(200);
      expectProblem(await request(app).get(`/api/v1/webhooks/${created.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    });

    it('refuses agents, API keys without the scope, and what the contract does not allow', async () => {
      const t = await createTenant();
      const agent = await addMember(t, { role: 'agent' });
      const agentToken = await login(agent.email);
      expectProblem(await request(app).get('/api/v1/webhooks').set(bearer(agentToken)), 403, 'ERR_FORBIDDEN');
      const key = (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'r', scopes: ['webhooks:read'] }).expect(201)).body.key;
      const asKey = { 'X-API-Key': key, 'X-Tenant-ID': t.tenantId };
      await request(app).get('/api/v1/webhooks').set(asKey).expect(200);
      expectProblem(await request(app).post('/api/v1/webhooks').set(asKey).send({ url: 'https://a.example/', events: ['*'] }), 403, 'ERR_FORBIDDEN');
      const auth = bearer(t.owner.accessToken);
      const bad = expectProblem(await request(app).post('/api/v1/webhooks').set(auth).send({ url: 'https://a.example/', events: ['typing'] }), 400, 'ERR_VALIDATION');
      expect(bad.errors[0].path).to.match(/^\/body\/events/);
      const ftp = expectProblem(await request(app).post('/api/v1/webhooks').set(auth).send({ url: 'ftp://a.example/', events: ['*'] }), 400, 'ERR_VALIDATION');
      expect(ftp.errors).to.deep.equal([{ path: '/body/url', message: 'must be an http:// or https:// URL' }]);
      const other = await createTenant();
      const theirs = (await request(app).post('/api/v1/webhooks').set(bearer(other.owner.accessToken)).send({ url: 'https://b.example/', events: ['*'] }).expect(201)).body;
      expectProblem(await request(app).get(`/api/v1/webhooks/${theirs.id}`).set(auth), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).post(`/api/v1/webhooks/${theirs.id}/test`).set(auth), 404, 'ERR_NOT_FOUND');
    });
  });

  describe('delivery', () => {
    it('delivers every subscribed event, signed, as the envelope of the feed; an endpoint gets only its types', async () => {
      const t = await createTenant();
      const all = await receiver();
      const some = await receiver();
      await createWebhook(t, all, ['*']);
      await createWebhook(t, some, ['conversation.created', 'conversation.closed']);
      const conv = await createConversation(t, { message: 'Hello' }, t.owner.accessToken, app);
      await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'Hi there' }).expect(201);
      await request(app).post(`/api/v1/conversations/${conv.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
      const feed = await feedEvents(t);
      expect(feed.length).to.be.greaterThan(3);
      // At least once: a slow attempt may be retried under the same id, so count ids, not requests.
      await all.until((got) => new Set(got.map((d) => d.id)).size >= feed.length);
      await some.until((got) => new Set(got.map((d) => d.id)).size >= 2);
      for (const r of [all, some]) {
        for (const d of r.received) {
          expect(d.verified, d.body).to.be.an('object');
          expect(d.verified!.id).to.equal(d.id);
          expect(d.answered).to.equal(200);
        }
      }
      // The body is the feed's envelope, byte for byte (the feed answers the same JSON).
      const byId = new Map(all.received.map((d) => [d.id, d.verified]));
      expect([...byId.keys()].sort()).to.deep.equal(feed.map((e) => e.id).sort());
      for (const e of feed) expect(byId.get(e.id)).to.deep.equal(e);
      expect([...new Set(some.received.map((d) => d.verified!.type))].sort()).to.deep.equal(['conversation.closed', 'conversation.created']);
    });

    it('a receiver down for a while gets everything once it is up, each webhook-id retried under the same id', async () => {
      const t = await createTenant();
      // Down for its first ten requests, then up.
      let requests = 0;
      const r = await receiver({ behave: () => (++requests <= 10 ? 503 : 'ok') });
      const hook = await createWebhook(t, r, ['message.created']);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      for (let i = 0; i < 5; i++) {
        await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: `m${i}` }).expect(201);
      }
      await r.until((got) => new Set(got.filter((d) => d.answered === 200).map((d) => d.id)).size === 5);
      const ok = r.received.filter((d) => d.answered === 200);
      expect(ok.length, 'each delivered once').to.equal(5);
      expect(r.received.filter((d) => d.answered === 503)).to.have.length(10);
      for (const d of ok) {
        const attempts = r.received.filter((x) => x.id === d.id);
        expect(new Set(attempts.map((x) => x.body)).size, 'the same body on every attempt').to.equal(1);
      }
      const rows = await eventually(async () => {
        const list = await deliveries(t, hook.id);
        return list.every((x) => x.status === 'succeeded') && list;
      }, 'the deliveries to be recorded as succeeded');
      expect(rows).to.have.length(5);
      expect(rows.reduce((n, row) => n + row.attempts, 0)).to.equal(15);
      for (const row of rows) {
        expect(row.delivered_at).to.be.a('string');
        expect(row.next_attempt_at).to.equal(null);
      }
    });

    it('gives up on a receiver that does not answer within the timeout, and fails a delivery after the last retry', async () => {
      const t = await createTenant();
      const r = await receiver({ behave: () => 'hang' });
      const hook = await createWebhook(t, r);
      const { event_id } = (await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202)).body;
      // The first attempt and five retries, each cut at the timeout.
      await r.until((got) => got.filter((d) => d.id === event_id).length === 6, 20_000);
      const [row] = await eventually(async () => {
        const list = await deliveries(t, hook.id);
        return list[0]?.status === 'failed' && list;
      }, 'the delivery to fail');
      expect(row).to.include({ event_id, event_type: 'webhook.test', attempts: 6, last_status_code: null, next_attempt_at: null });
      expect(row!.last_error).to.equal(`no answer within ${TIMEOUT_MS} ms`);
      expect(r.received.every((d) => d.verified)).to.equal(true);
    });

    it('410 Gone disables the endpoint at once, and it says why', async () => {
      const t = await createTenant();
      const r = await receiver({ behave: () => 410 });
      const hook = await createWebhook(t, r);
      await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202);
      await r.until((got) => got.length === 1);
      const got = await eventually(async () => {
        const res = await request(app).get(`/api/v1/webhooks/${hook.id}`).set(bearer(t.owner.accessToken)).expect(200);
        return !res.body.enabled && res.body;
      }, 'the endpoint to be disabled');
      expect(got.disabled_reason).to.equal('gone');
      expect(got.disabled_at).to.be.a('string');
      const [row] = await deliveries(t, hook.id);
      expect(row).to.include({ status: 'failed', last_status_code: 410 });
      expectProblem(await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)), 409, 'ERR_CONFLICT');
      expectProblem(await request(app).post(`/api/v1/webhooks/${hook.id}/deliveries/${row!.id}/redeliver`).set(bearer(t.owner.accessToken)), 409, 'ERR_CONFLICT');
    });

    it('five days of nothing but failures disables the endpoint and mails the owners', async () => {
      const t = await createTenant();
      const r = await receiver({ behave: () => 500 });
      const hook = await createWebhook(t, r);
      // The streak began six days ago (moved back in the database: no test waits five days).
      await h.database.asSystem((trx) =>
        trx.updateTable('webhooks').set({ failing_since: sql<Date>`now() - interval '6 days'` }).where('id', '=', hook.id).execute(),
      );
      await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202);
      const mail = await eventually(async () => sentMail.find((m) => m.to === t.owner.email && /webhook endpoint was disabled/.test(m.subject)), 'the owner to be mailed');
      expect(mail.text).to.contain(hook.id);
      const got = (await request(app).get(`/api/v1/webhooks/${hook.id}`).set(bearer(t.owner.accessToken)).expect(200)).body;
      expect(got).to.include({ enabled: false, disabled_reason: 'failing' });
    });

    it('a success ends the failure streak', async () => {
      const t = await createTenant();
      const r = await receiver();
      const hook = await createWebhook(t, r);
      await h.database.asSystem((trx) =>
        trx.updateTable('webhooks').set({ failing_since: sql<Date>`now() - interval '1 day'` }).where('id', '=', hook.id).execute(),
      );
      await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202);
      await eventually(
        async () => (await h.database.asSystem((trx) => trx.selectFrom('webhooks').select('failing_since').where('id', '=', hook.id).executeTakeFirstOrThrow())).failing_since === null,
        'the streak to end',
      );
    });

    it('test sends webhook.test to that endpoint only; redeliver sends a delivery again under the same webhook-id', async () => {
      const t = await createTenant();
      const r = await receiver();
      const other = await receiver();
      const hook = await createWebhook(t, r, ['message.created']);
      await createWebhook(t, other, ['*']);
      const { event_id } = (await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202)).body;
      await r.until((got) => got.length === 1);
      expect(r.received[0]!.verified).to.include({ id: event_id, type: 'webhook.test', tenant_id: t.tenantId });
      expect(r.received[0]!.verified!.data).to.deep.equal({ webhook_id: hook.id });
      const [row] = await eventually(async () => {
        const list = await deliveries(t, hook.id, '&status=succeeded');
        return list.length === 1 && list;
      }, 'the delivery to succeed');
      const again = await request(app).post(`/api/v1/webhooks/${hook.id}/deliveries/${row!.id}/redeliver`).set(bearer(t.owner.accessToken)).expect(202);
      expect(again.body).to.include({ id: row!.id, status: 'pending' });
      await r.until((got) => got.length === 2);
      expect(r.received[1]!.id).to.equal(event_id);
      expect(r.received[1]!.body).to.equal(r.received[0]!.body);
      await eventually(async () => (await deliveries(t, hook.id))[0]?.attempts === 2 && true, 'two attempts recorded');
      // The '*' endpoint of the same tenant never got the other endpoint's test.
      expect(other.received.filter((d) => d.verified?.type === 'webhook.test')).to.deep.equal([]);
      expectProblem(
        await request(app).post(`/api/v1/webhooks/${hook.id}/deliveries/whd_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a92/redeliver`).set(bearer(t.owner.accessToken)),
        404,
        'ERR_NOT_FOUND',
      );
    });

    it('after a secret rotation both secrets sign for the overlap, then only the new one', async () => {
      const t = await createTenant();
      const oldOnly = await receiver();
      const hook = await createWebhook(t, oldOnly);
      const oldSecret = hook.secret;
      const rotated = (await request(app).post(`/api/v1/webhooks/${hook.id}/rotate-secret`).set(bearer(t.owner.accessToken)).expect(200)).body;
      expect(rotated.secret).to.not.equal(oldSecret);
      expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).to.be.within(23.9 * 3_600_000, 24 * 3_600_000);
      oldOnly.secrets.push(rotated.secret);
      await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202);
      await oldOnly.until((got) => got.length === 1);
      const during = oldOnly.received[0]!;
      expect(String(during.headers['webhook-signature']).split(' ')).to.have.length(2);
      expect(during.verifiedBy).to.deep.equal([oldSecret, rotated.secret]);
      // The overlap ends (moved in the database): only the new secret signs.
      await h.database.asSystem((trx) =>
        trx.updateTable('webhooks').set({ previous_secret_expires_at: sql<Date>`now() - interval '1 second'` }).where('id', '=', hook.id).execute(),
      );
      await request(app).post(`/api/v1/webhooks/${hook.id}/test`).set(bearer(t.owner.accessToken)).expect(202);
      await oldOnly.until((got) => got.length === 2);
      const after = oldOnly.received[1]!;
      expect(String(after.headers['webhook-signature']).split(' ')).to.have.length(1);
      expect(after.verifiedBy).to.deep.equal([rotated.secret]);
    });
  });

  describe('signing', () => {
    it('signs byte for byte as standardwebhooks does, for any secret, id, time and body', () => {
      fc.assert(
        fc.property(
          fc.uint8Array({ minLength: 1, maxLength: 64 }),
          fc.string({ minLength: 1, maxLength: 40 }),
          fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }),
          fc.string({ unit: 'binary', maxLength: 300 }),
          (key, id, at, body) => {
            const secret = `whsec_${Buffer.from(key).toString('base64')}`;
            expect(signature(secret, id, at, body)).to.equal(new StandardWebhook(secret).sign(id, at, body));
          },
        ),
      );
    });

    it('signs a run of messages with secrets in turn as standardwebhooks does: no state is carried from one to the next', () => {
      fc.assert(
        fc.property(
          fc.array(fc.uint8Array({ minLength: 1, maxLength: 100 }), { minLength: 1, maxLength: 3 }),
          fc.array(fc.tuple(fc.nat(), fc.string({ minLength: 1, maxLength: 20 }), fc.oneof(fc.string({ unit: 'binary', maxLength: 50 }), fc.string({ unit: 'grapheme', minLength: 6_000, maxLength: 8_000 }))), {
            minLength: 2,
            maxLength: 8,
          }),
          (keys, messages) => {
            const secrets = keys.map((key) => `whsec_${Buffer.from(key).toString('base64')}`);
            const at = new Date(1_764_000_000_000);
            for (const [pick, id, body] of messages) {
              const secret = secrets[pick % secrets.length]!;
              expect(signature(secret, id, at, body)).to.equal(new StandardWebhook(secret).sign(id, at, body));
            }
          },
        ),
        { numRuns: 60 },
      );
    });

    it('signs as standardwebhooks does at the edge of the reused buffer, with three- and four-byte characters and lone surrogates', () => {
      const secret = `whsec_${Buffer.from('a key for the edge of the buffer').toString('base64')}`;
      const at = new Date(1_764_000_000_000);
      const id = 'evt_\uD800edge';
      // The signed text is "{id}.{seconds}.{body}": bodies made so that it is this many UTF-16 units long.
      const prefix = `${id}.${Math.floor(at.getTime() / 1000)}.`.length;
      // 21,845 units fit the 64 KiB buffer at three bytes each; up to 32,768 they would at two.
      for (const units of [21_844, 21_845, 21_846, 30_000, 32_768]) {
        for (const fill of ['€', '😀', '\uDC00', '€😀\uD800a']) {
          const length = units - prefix;
          const body = fill.repeat(Math.ceil(length / fill.length)).slice(0, length);
          expect(signature(secret, id, at, body), `${units} units of ${JSON.stringify(fill)}`).to.equal(new StandardWebhook(secret).sign(id, at, body));
        }
      }
    });

    it('refuses a secret standardwebhooks refuses', () => {
      expect(() => signature('whsec_', 'evt_1', new Date(), '{}')).to.throw(/empty/);
    });
  });

  describe('outgoing addresses', () => {
    it('the filter refuses loopback, private, link-local, metadata and other non-public addresses', () => {
      for (const address of ['127.0.0.1', '127.8.9.10', '::1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '0.0.0.0', '::', '100.64.0.1', '224.0.0.1']) {
        expect(addressRefusal(address), address).to.be.a('string');
      }
      // Judged only, never contacted.
      for (const address of ['93.184.216.34', '2606:4700:4700::1111']) expect(addressRefusal(address), address).to.equal(undefined);
    });

    it('URLs naming such an address, or localhost, are refused at creation; production requires https', () => {
      const strict = { allowPrivate: false, requireHttps: true };
      for (const url of ['https://127.0.0.1/', 'https://[::1]/', 'https://169.254.169.254/latest/meta-data', 'https://10.1.2.3/', 'https://localhost/', 'https://api.localhost/', 'https://[::ffff:7f00:1]/']) {
        expect(urlRefusal(url, strict), url).to.be.a('string');
      }
      expect(urlRefusal('http://hooks.example.com/', strict)).to.equal('must be an https:// URL');
      expect(urlRefusal('https://user:pw@hooks.example.com/', strict)).to.equal('must not carry credentials');
      expect(urlRefusal('https://hooks.example.com/chat', strict)).to.equal(undefined);
      expect(urlRefusal('http://127.0.0.1:9/', { allowPrivate: true, requireHttps: false })).to.equal(undefined);
    });

    it('the API answers 400 for such a URL when private addresses are not allowed', async () => {
      const strictApp = buildApp({ ...h.deps, bus, config: { ...h.deps.config, webhooks: { allowPrivate: false, requireHttps: true } } }).app;
      const t = await createTenant();
      const res = await request(strictApp).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: 'https://169.254.169.254/', events: ['*'] });
      expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path).to.equal('/body/url');
    });

    it('the transport\'s lookup refuses a name when any of its addresses is not public, before connecting', async () => {
      const lookupOf = (addresses: string[]) =>
        new Promise<unknown>((resolve) =>
          filteringLookup((_h, _o, cb) => cb(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))))(
            'hooks.attacker.example',
            { all: true },
            (err, answer) => resolve(err ?? answer),
          ),
        );
      // Judged only, never contacted: what an attacker's DNS would answer, a public address beside the metadata one.
      const refused = await lookupOf(['93.184.216.34', '169.254.169.254']);
      expect(refused).to.be.instanceOf(AddressRefused);
      expect((refused as Error).message).to.equal('hooks.attacker.example: the address 169.254.169.254 is linkLocal, not public');
      expect(await lookupOf(['93.184.216.34', '2606:4700:4700::1111'])).to.deep.equal([
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700:4700::1111', family: 6 },
      ]);
      // Through net.connect, as undici's connector uses it: a name resolved to a listening loopback port is
      // refused before any connection is made.
      let accepted = 0;
      const server = createNetServer((socket) => {
        accepted++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const resolver: Resolver = (_host, _options, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]);
      let connected = false;
      const error = await new Promise<Error>((resolve) => {
        const socket = connect({ host: 'hooks.attacker.example', port: (server.address() as { port: number }).port, lookup: filteringLookup(resolver) });
        socket.on('connect', () => (connected = true));
        socket.on('error', resolve);
      });
      server.close();
      expect(error).to.be.instanceOf(AddressRefused);
      expect([connected, accepted]).to.deep.equal([false, 0]);
    });

    it('a dispatcher that does not allow private addresses never reaches a loopback receiver', async () => {
      const r = await receiver();
      const transport = createTransport({ allowPrivate: false, timeoutMs: 1000 });
      for (const url of [r.url, r.url.replace('127.0.0.1', 'localhost'), r.url.replace('127.0.0.1', '[::ffff:127.0.0.1]')]) {
        const outcome = await transport.post(url, {}, '{}');
        expect(outcome.statusCode, url).to.equal(null);
        expect(outcome.error, url).to.match(/^refused: /);
      }
      transport.close();
      // The same receiver answers when reached through a transport that allows loopback: it was up all along.
      const open = createTransport({ allowPrivate: true, timeoutMs: 1000 });
      expect(await open.post(r.url, {}, '{}')).to.deep.equal({ statusCode: 200, error: null });
      open.close();
      expect(r.received).to.have.length(1);
    });

    it('the transport posts to the URL\'s path and query with its credentials, and gives up on a silent receiver', async () => {
      const seen: { url: string | undefined; authorization: string | undefined }[] = [];
      const server = createServer((req, res) => {
        seen.push({ url: req.url, authorization: req.headers.authorization });
        if (req.url?.startsWith('/silent')) return; // never answers
        if (req.url === '/hints') return res.writeEarlyHints({ link: '</style.css>; rel=preload' }, () => res.socket?.destroy());
        res.writeHead(204).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `127.0.0.1:${(server.address() as { port: number }).port}`;
      const transport = createTransport({ allowPrivate: true, timeoutMs: 300 });
      try {
        expect(await transport.post(`http://hook%20user:p%40ss@${base}/hooks/in?team=a&x=1`, {}, '{}')).to.deep.equal({ statusCode: 204, error: null });
        expect(await transport.post(`http://${base}/hooks/in?team=a&x=1`, {}, '{}')).to.deep.equal({ statusCode: 204, error: null });
        expect(seen).to.deep.equal([
          { url: '/hooks/in?team=a&x=1', authorization: `Basic ${Buffer.from('hook user:p@ss').toString('base64')}` },
          { url: '/hooks/in?team=a&x=1', authorization: undefined },
        ]);
        expect(await transport.post(`http://${base}/silent`, {}, '{}')).to.deep.equal({ statusCode: null, error: 'no answer within 300 ms' });
        expect(await transport.post('ftp://example.com/x', {}, '{}')).to.deep.equal({ statusCode: null, error: 'the scheme ftp: is not allowed' });
        expect(await transport.post('not a url', {}, '{}')).to.deep.equal({ statusCode: null, error: 'the URL is not valid' });
        // The URL parser accepts an escape that decodes to nothing.
        expect(await transport.post(`http://a%zz:b@${base}/hooks/in`, {}, '{}')).to.deep.equal({ statusCode: null, error: 'the URL is not valid' });
        // A header undici refuses (a line break in its value) is a failed attempt, not a thrown error.
        expect(await transport.post(`http://${base}/hooks/in`, { 'x-bad': 'a\r\nb' }, '{}')).to.include({ statusCode: null });
        // 103 Early Hints and then a closed connection: no answer, not a 103.
        const hinted = await transport.post(`http://${base}/hints`, {}, '{}');
        expect(hinted.statusCode).to.equal(null);
        expect(hinted.error).to.be.a('string').and.not.match(/answered/);
      } finally {
        transport.close();
        server.closeAllConnections();
        server.close();
      }
    });

    it('reads at most 64 KiB of an answer: an endless one counts by its status, and the next post goes through', async () => {
      let streaming = 0;
      const server = createServer((req, res) => {
        req.resume();
        if (req.url === '/endless') {
          streaming++;
          res.writeHead(req.headers['x-status'] === '500' ? 500 : 200, { 'content-type': 'text/plain' });
          const chunk = Buffer.alloc(16 * 1024, 'x');
          const write = () => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', write);
          };
          write();
          return;
        }
        res.writeHead(204).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const transport = createTransport({ allowPrivate: true, timeoutMs: 5000 });
      try {
        expect(await transport.post(`${base}/endless`, {}, '{}')).to.deep.equal({ statusCode: 200, error: null });
        expect(await transport.post(`${base}/endless`, { 'x-status': '500' }, '{}')).to.deep.equal({ statusCode: 500, error: 'the receiver answered 500' });
        expect(await transport.post(`${base}/after`, {}, '{}')).to.deep.equal({ statusCode: 204, error: null });
        expect(streaming).to.equal(2);
      } finally {
        transport.close();
        server.closeAllConnections();
        server.close();
      }
    });

    it('posts over TLS to a receiver whose certificate a trusted authority signed, and refuses one no authority signed', async function () {
      this.timeout(30_000);
      const dir = await mkdtemp(join(tmpdir(), 'chat-hook-tls-'));
      execFileSync('openssl', [
        'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      ], { stdio: 'ignore' });
      const seen: { path: string | undefined; alpn: string | false | null; signature: string | undefined }[] = [];
      // The receiver would take HTTP/2 too: the transport asks for HTTP/1.1 only.
      const tlsOptions = { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')), ALPNProtocols: ['h2', 'http/1.1'] };
      const server = createHttpsServer(tlsOptions, (req, res) => {
        seen.push({ path: req.url, alpn: (req.socket as TLSSocket).alpnProtocol, signature: req.headers['webhook-signature'] as string | undefined });
        req.resume();
        req.on('end', () => res.writeHead(204).end());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}/hooks/in`;
      try {
        // This process does not trust the certificate: the attempt fails before any request is sent.
        const transport = createTransport({ allowPrivate: true, timeoutMs: 5000 });
        const refused = await transport.post(url, {}, '{}');
        transport.close();
        expect(refused.statusCode).to.equal(null);
        expect(refused.error).to.match(/self[- ]signed|certificate/i);
        expect(seen).to.deep.equal([]);
        // A process that trusts it (NODE_EXTRA_CA_CERTS, read at its start) delivers.
        const script = `
          import { createTransport, signedHeaders } from ${JSON.stringify(new URL('../../src/delivery/transport.ts', import.meta.url).href)};
          const transport = createTransport({ allowPrivate: true, timeoutMs: 5000 });
          const outcome = await transport.post(${JSON.stringify(url)}, signedHeaders('evt_1', '{}', ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']), '{}');
          transport.close();
          process.stdout.write(JSON.stringify(outcome));`;
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') } });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk));
        child.stderr.resume();
        await new Promise((resolve) => child.on('close', resolve));
        expect(JSON.parse(out)).to.deep.equal({ statusCode: 204, error: null });
        expect(seen).to.have.length(1);
        expect(seen[0]).to.include({ path: '/hooks/in', alpn: 'http/1.1' });
        expect(seen[0]!.signature).to.match(/^v1,/);
      } finally {
        server.closeAllConnections();
        server.close();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('redirects are not followed: a 3xx is a failed attempt', async () => {
      const r = await receiver({ behave: () => 307 });
      const transport = createTransport({ allowPrivate: true, timeoutMs: 1000 });
      expect(await transport.post(r.url, {}, '{}')).to.deep.equal({ statusCode: 307, error: 'the receiver answered 307' });
      transport.close();
    });
  });
});

describe('webhooks across instances', () => {
  it('an endpoint that hangs holds at most its share of the slots: another tenant\'s deliveries go on', async () => {
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    const hanging = await startReceiver({ behave: () => 'hang' });
    const fast = await startReceiver();
    // Four slots, two for a slow endpoint; an attempt gives up after a second (slow: over half of that).
    const dispatcher = testDispatcher(h, {
      bus,
      timeoutMs: 1000,
      leaseMs: 10_000,
      retryDelaysMs: [3_600_000],
      concurrency: 4,
      endpointConcurrency: 2,
      pollMs: 50,
    });
    try {
      const a = await createTenant();
      const b = await createTenant();
      for (const [t, r] of [[a, hanging], [b, fast]] as const) {
        const hook = (await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: r.url, events: ['message.created'] }).expect(201)).body;
        r.secrets.push(hook.secret);
      }
      const convA = await createConversation(a, {}, a.owner.accessToken, app);
      const convB = await createConversation(b, {}, b.owner.accessToken, app);
      // The cursor exists before the messages (a first pass starts at the head of the feed).
      await dispatcher.fanOutOnce();
      // Twelve deliveries to the hanging endpoint are older than the six to the fast one.
      for (let i = 0; i < 12; i++) {
        await request(app).post('/api/v1/messages').set(bearer(a.owner.accessToken)).send({ conversation_id: convA.id, content: `a ${i}` }).expect(201);
      }
      const sent: string[] = [];
      for (let i = 0; i < 6; i++) {
        sent.push((await request(app).post('/api/v1/messages').set(bearer(b.owner.accessToken)).send({ conversation_id: convB.id, content: `b ${i}` }).expect(201)).body.id);
      }
      dispatcher.start();
      await fast.until((got) => sent.every((id) => got.some((d) => d.verified?.data?.message?.id === id && d.answered === 200)), 15_000);
      // The first round took every slot (nothing was known of the endpoint yet); once its attempts timed
      // out, it got two slots at a time and the fast endpoint the rest. Without the cap, the fast
      // endpoint would have waited for all twelve first attempts (three rounds of timeouts).
      const attemptedA = new Set(hanging.received.map((d) => d.id)).size;
      expect(attemptedA).to.be.at.least(4).and.below(12);
    } finally {
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', 'in', [hanging.url, fast.url]).execute());
      await hanging.close();
      await fast.close();
    }
  });

  it('claims not yet attempted when the dispatcher stops go back at once: free again, their attempt not counted', async () => {
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    // What arrived, known on arrival: a hanging request is recorded in `received` only once its sender gives up.
    const arrived: string[] = [];
    let firstArrived!: () => void;
    const first = new Promise<void>((resolve) => (firstArrived = resolve));
    const hanging = await startReceiver({
      behave: (d) => {
        arrived.push(d.id);
        firstArrived();
        return 'hang';
      },
    });
    // One slot: a claim takes four rounds of it, so one attempt hangs while three claims wait behind it.
    const dispatcher = testDispatcher(h, {
      bus,
      timeoutMs: 1000,
      leaseMs: 60_000,
      retryDelaysMs: [3_600_000],
      concurrency: 1,
      pollMs: 50,
    });
    try {
      const t = await createTenant();
      const hook = (await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: hanging.url, events: ['message.created'] }).expect(201)).body;
      hanging.secrets.push(hook.secret);
      const conversation = await createConversation(t, {}, t.owner.accessToken, app);
      await dispatcher.fanOutOnce();
      for (let i = 0; i < 5; i++) {
        await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conversation.id, content: `m ${i}` }).expect(201);
      }
      dispatcher.start();
      await first;
      // The hanging attempt ends at its timeout; the claims queued behind it are given back before that.
      await dispatcher.stop();
      const rows = await h.database.asSystem((trx) =>
        trx.selectFrom('webhook_deliveries').select(['event_id', 'attempts', 'lock_token', 'locked_until']).where('webhook_id', '=', hook.id).execute(),
      );
      const attempted = new Set(arrived);
      expect(rows).to.have.length(5);
      expect(attempted.size).to.equal(1);
      for (const row of rows) {
        expect(row.lock_token, row.event_id).to.equal(null);
        expect(row.locked_until, row.event_id).to.equal(null);
        expect(row.attempts, row.event_id).to.equal(attempted.has(row.event_id) ? 1 : 0);
      }
    } finally {
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', '=', hanging.url).execute());
      await hanging.close();
    }
  });

  it('a claim looks up what it takes: it does not read the deliveries already made', async () => {
    // Planned as a semi-join, a large claim (1,024 is the largest the dispatcher makes) read the whole table,
    // every delivery ever made, at each pass: during a backlog's drain, most of the database's work.
    const h = await getHarness();
    const t = await createTenant();
    const hookId = `wh_${crypto.randomUUID()}`;
    await h.database.asSystem(async (trx) => {
      await sql`insert into webhooks (id, tenant_id, url, events, secret) values (${hookId}, ${t.tenantId}, 'https://example.test/hook', ${['*']}, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')`.execute(trx);
      await sql`insert into webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, body, status, next_attempt_at, delivered_at)
        select 'whd_' || gen_random_uuid(), ${t.tenantId}, ${hookId}, 'ev_' || gen_random_uuid(), 'message.created', repeat('x', 400),
          case when i <= 1500 then 'pending' else 'succeeded' end,
          -- Due a year ago: older than anything other tests left due in a shared database, so claimed first.
          case when i <= 1500 then now() - interval '1 year' end, case when i > 1500 then now() end
        from generate_series(1, 5000) as i`.execute(trx);
    });
    await sql`analyze webhook_deliveries`.execute(h.database.db);
    try {
      const { claimed, seqScans, afterControl } = await h.database.asSystem(async (trx) => {
        const claimed = await claimDueDeliveries(trx, 1024, crypto.randomUUID(), 10_000);
        const seqScans = async () =>
          Number((await sql<{ seq_scan: string }>`select seq_scan from pg_stat_xact_user_tables where relname = 'webhook_deliveries'`.execute(trx)).rows[0]?.seq_scan ?? 0);
        const inClaim = await seqScans();
        // The control: a sequential scan in this transaction is counted, here, on this database.
        await sql`select count(*) from webhook_deliveries`.execute(trx);
        return { claimed, seqScans: inClaim, afterControl: await seqScans() };
      });
      expect(claimed.filter((d) => d.webhook_id === hookId)).to.have.length(1024);
      expect(seqScans, 'sequential scans of webhook_deliveries in the claim').to.equal(0);
      expect(afterControl, 'the control scan').to.be.above(0);
    } finally {
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('id', '=', hookId).execute());
    }
  });

  it('a backlog held back while its endpoint was at its slow cap goes on when a slot frees, not at the next poll', async () => {
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    // Database passes counted as they end: the sentinel for "the dispatcher has looked and found nothing".
    let passes = 0;
    let onPass: (() => void) | undefined;
    const database = new Proxy(h.database, {
      get(target, prop) {
        if (prop === 'asSystem') {
          return async (fn: Parameters<typeof target.asSystem>[0]) => {
            try {
              return await target.asSystem(fn);
            } finally {
              passes++;
              onPass?.();
            }
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    // The first attempt finds nobody (the endpoint is slow at once), the second hangs until released,
    // the rest succeed at once.
    let calls = 0;
    let release: (() => void) | undefined;
    const succeeded = new Set<string>();
    let onSuccess: (() => void) | undefined;
    const transport = {
      post: async (_url: string, headers: Record<string, string>) => {
        const call = ++calls;
        if (call === 1) return { statusCode: null, error: 'ECONNREFUSED: nobody there' };
        if (call === 2) await new Promise<void>((resolve) => (release = resolve));
        succeeded.add(headers['webhook-id']!);
        onSuccess?.();
        return { statusCode: 200, error: null };
      },
      close: () => undefined,
    };
    const dispatcher = testDispatcher(h, {
      database,
      bus,
      retryDelaysMs: [3_600_000],
      concurrency: 2,
      endpointConcurrency: 1,
      pollMs: 3_600_000,
      transport,
    });
    const t = await createTenant();
    const hook = (await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: 'http://127.0.0.1:9/never-reached', events: ['message.created'] }).expect(201)).body;
    try {
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      await dispatcher.fanOutOnce();
      for (let i = 0; i < 30; i++) {
        await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: `m ${i}` }).expect(201);
      }
      expect((await dispatcher.fanOutOnce()).inserted).to.equal(30);
      // The first claims take some, two attempts start: the first fails (slow at once), the second hangs
      // and holds the one slot the endpoint now has, so the next claim passes it over and comes back empty.
      const looked = new Promise<void>((resolve) => (onPass = () => passes >= 5 && release && resolve()));
      passes = 0;
      dispatcher.wake();
      await looked;
      const allDelivered = new Promise<void>((resolve) => (onSuccess = () => succeeded.size === 29 && resolve()));
      release!();
      // All but the failed first, those never claimed before included, although no poll comes for an hour.
      await allDelivered;
      expect(succeeded.size).to.equal(29);
    } finally {
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('id', '=', hook.id).execute());
    }
  });

  it('a commit on one instance wakes the dispatcher of another through Redis, long before its poll', async function () {
    if (!process.env.REDIS_URL) this.skip();
    const h = await getHarness();
    const bus = new EventBus();
    const { app } = buildApp({ ...h.deps, bus });
    const redisA = await openRedis(process.env.REDIS_URL, { timeoutMs: 1000, onError: () => undefined });
    const redisB = await openRedis(process.env.REDIS_URL, { timeoutMs: 1000, onError: () => undefined });
    const wakeupsA = await RedisFeedWakeups.create(redisA);
    const wakeupsB = await RedisFeedWakeups.create(redisB);
    // Instance A makes the events and has no dispatcher; B's bus hears nothing and it polls once an hour.
    const stopRelay = wakeupsA.relay(bus);
    const r = await startReceiver();
    const dispatcher = testDispatcher(h, {
      bus: new EventBus(),
      pollMs: 3_600_000,
      wakeups: wakeupsB,
    });
    try {
      const t = await createTenant();
      const hook = (await request(app).post('/api/v1/webhooks').set(bearer(t.owner.accessToken)).send({ url: r.url, events: ['message.created'] }).expect(201)).body;
      r.secrets.push(hook.secret);
      const conv = await createConversation(t, {}, t.owner.accessToken, app);
      // The cursor exists before the message (a first pass starts at the head of the feed).
      await dispatcher.fanOutOnce();
      dispatcher.start();
      const sent = (await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'hi' }).expect(201)).body;
      await r.until((got) => got.some((d) => d.verified?.data?.message?.id === sent.id && d.answered === 200), 10_000);
    } finally {
      stopRelay();
      await dispatcher.stop();
      await h.database.asSystem((trx) => trx.deleteFrom('webhooks').where('url', '=', r.url).execute());
      await r.close();
      await wakeupsA.close();
      await wakeupsB.close();
      redisA.close();
      redisB.close();
    }
  });
});
