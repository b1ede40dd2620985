import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Express } from 'express';
import request from 'supertest';
import { buildApp } from '../../src/app.ts';
import { createLlmClient } from '../../src/bots/llm.client.ts';
import { urlRefusal } from '../../src/webhooks/webhook.service.ts';
import { type Resolver, addressRefusal, createTransport } from '../../src/delivery/transport.ts';
import { createTenant } from '../support/factories.ts';
import { TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

// IPv6 addresses that carry an IPv4 address are judged by what they carry (issue 46): at creation on every
// surface that takes a URL, and at connection on what a name resolves to. Nothing here leaves loopback:
// refused forms are never connected to, allowed ones are judged only.

/** Each form, carrying a loopback, private or metadata IPv4 address, with what the refusal names. */
const REFUSED: [address: string, carried: string][] = [
  // IPv4-compatible ::/96, written both ways (URLs and resolvers give the hex form).
  ['::127.0.0.1', '127.0.0.1'],
  ['::7f00:1', '127.0.0.1'],
  ['::a9fe:a9fe', '169.254.169.254'],
  ['::c0a8:1', '192.168.0.1'],
  // Mapped ::ffff:0:0/96 and translated ::ffff:0:0:0/96.
  ['::ffff:127.0.0.1', '127.0.0.1'],
  ['::ffff:0:a00:1', '10.0.0.1'],
  // NAT64 64:ff9b::/96.
  ['64:ff9b::7f00:1', '127.0.0.1'],
  ['64:ff9b::a9fe:a9fe', '169.254.169.254'],
  // 6to4 2002::/16: the IPv4 address is bits 16-47.
  ['2002:7f00:1::1', '127.0.0.1'],
  ['2002:a9fe:a9fe::', '169.254.169.254'],
  // Teredo 2001::/32: a public server (8.8.8.8) with the client 127.0.0.1 (inverted: 80ff:fffe) ...
  ['2001:0:808:808::80ff:fffe', '127.0.0.1'],
  // ... and a metadata server with a public client (8.8.8.8 inverted: f7f7:f7f7).
  ['2001:0:a9fe:a9fe::f7f7:f7f7', '169.254.169.254'],
];

/** The same forms carrying public addresses: judged only, never contacted. */
const ALLOWED = ['::808:808', '::ffff:808:808', '64:ff9b::808:808', '2002:808:808::1', '2001:0:808:808::f7f7:f7f7'];

describe('IPv6 forms that carry an IPv4 address', function () {
  this.timeout(30_000);
  let strict: Express;

  before(async () => {
    const h = await getHarness();
    strict = buildApp({ ...h.deps, config: { ...TEST_CONFIG, webhooks: { allowPrivate: false, requireHttps: false } } }).app;
  });

  it('the rule judges the IPv4 address each form carries, both of a Teredo address', () => {
    for (const [address, carried] of REFUSED) {
      expect(addressRefusal(address), address).to.match(new RegExp(`^the address ${address} carries ${carried.replaceAll('.', '\\.')}, which is \\w+, not public$`));
    }
    for (const address of ALLOWED) expect(addressRefusal(address), address).to.equal(undefined);
    // NAT64's local-use prefix is local whatever it carries; ::, ::1 are what they are.
    expect(addressRefusal('64:ff9b:1::808:808')).to.equal('the address 64:ff9b:1::808:808 is rfc6052, not public');
    expect(addressRefusal('::1')).to.equal('the address ::1 is loopback, not public');
    expect(addressRefusal('::')).to.equal('the address :: is unspecified, not public');
    // Other ranges of 2001::/23 stay refused, as before.
    expect(addressRefusal('2001:db8::1')).to.equal('the address 2001:db8::1 is reserved, not public');
  });

  it('every surface that takes a URL refuses each form at creation, and at change', async () => {
    const t = await createTenant();
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };
    const refusedAt = async (res: request.Response, path: string, address: string) => {
      const problem = expectProblem(res, 400, 'ERR_VALIDATION');
      expect(problem.errors, address).to.have.length(1);
      expect(problem.errors[0].path, address).to.equal(path);
      expect(problem.errors[0].message, address).to.match(/^must not point at a loopback, private, link-local or metadata address \(the address .* carries /);
    };
    const endpoint = (await request(strict).post('/api/v1/webhooks').set(auth).send({ url: 'http://hooks.example.com/chat', events: ['conversation.closed'] }).expect(201)).body;
    const bot = (await request(strict).post('/api/v1/bots').set(auth).send({ name: 'W', webhook_url: 'http://bots.example.com/hook' }).expect(201)).body;
    for (const [address] of REFUSED) {
      const url = `http://[${address}]:8080/hook`;
      await refusedAt(await request(strict).post('/api/v1/webhooks').set(auth).send({ url, events: ['*'] }), '/body/url', address);
      await refusedAt(await request(strict).patch(`/api/v1/webhooks/${endpoint.id}`).set(auth).send({ url }), '/body/url', address);
      await refusedAt(
        await request(strict)
          .post('/api/v1/workflows')
          .set(auth)
          .send({ name: 'W', trigger: { type: 'conversation.created' }, actions: [{ type: 'webhook', url }] }),
        '/body/actions/0/url',
        address,
      );
      await refusedAt(await request(strict).post('/api/v1/bots').set(auth).send({ name: 'W', webhook_url: url }), '/body/webhook_url', address);
      await refusedAt(await request(strict).patch(`/api/v1/bots/${bot.id}`).set(auth).send({ webhook_url: url }), '/body/webhook_url', address);
      await refusedAt(await request(strict).post('/api/v1/bots').set(auth).send({ name: 'F', kind: 'faq', avatar_url: url }), '/body/avatar_url', address);
      await refusedAt(await request(strict).patch(`/api/v1/bots/${bot.id}`).set(auth).send({ avatar_url: url }), '/body/avatar_url', address);
      await refusedAt(
        await request(strict).post('/api/v1/bots').set(auth).send({ name: 'L', kind: 'llm', llm: { base_url: `http://[${address}]/v1`, model: 'm', api_key: 'k' } }),
        '/body/llm/base_url',
        address,
      );
    }
    // Nothing was kept: the endpoint and the bot still hold their first URLs, and no other was made.
    expect((await request(strict).get(`/api/v1/webhooks/${endpoint.id}`).set(auth).expect(200)).body.url).to.equal('http://hooks.example.com/chat');
    expect((await request(strict).get(`/api/v1/bots/${bot.id}`).set(auth).expect(200)).body).to.include({ webhook_url: 'http://bots.example.com/hook', avatar_url: null });
    expect((await request(strict).get('/api/v1/bots').set(auth).expect(200)).body.data).to.have.length(1);
    expect((await request(strict).get('/api/v1/workflows').set(auth).expect(200)).body.data).to.have.length(0);
    // The same forms carrying public addresses pass: an avatar is never fetched by the service, the other
    // surfaces share the check.
    for (const address of ALLOWED) {
      const url = `http://[${address}]/a.png`;
      expect(urlRefusal(url, { allowPrivate: false, requireHttps: false }), address).to.equal(undefined);
      await request(strict).patch(`/api/v1/bots/${bot.id}`).set(auth).send({ avatar_url: url }).expect(200);
    }
  });

  describe('at connection, on what a name resolves to', () => {
    let receiver: Receiver;
    let llm: Server;
    let llmRequests = 0;
    /** Names asked of the injected resolver, to show the refusal came from the lookup. */
    const asked: string[] = [];
    const resolvingTo =
      (address: string): Resolver =>
      (hostname, _options, callback) => {
        asked.push(hostname);
        callback(null, [{ address, family: 6 }]);
      };

    before(async () => {
      receiver = await startReceiver();
      llm = createServer((_req, res) => {
        llmRequests++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[{"message":{"content":"hi"}}]}');
      });
      await new Promise<void>((resolve) => llm.listen(0, '127.0.0.1', () => resolve()));
    });

    after(async () => {
      await receiver.close();
      llm.closeAllConnections();
      await new Promise<void>((resolve) => llm.close(() => resolve()));
    });

    it('the transport of webhooks, workflow actions and bots refuses each form before connecting', async () => {
      const port = new URL(receiver.url).port;
      for (const [address, carried] of REFUSED) {
        asked.length = 0;
        const transport = createTransport({ allowPrivate: false, timeoutMs: 2000, resolve: resolvingTo(address) });
        try {
          const byName = await transport.post(`http://hooks.attacker.example:${port}/hook`, {}, '{}');
          expect(byName.statusCode, address).to.equal(null);
          expect(byName.error, address).to.equal(`refused: hooks.attacker.example: ${addressRefusal(address)}`);
          expect(byName.error, address).to.include(`carries ${carried},`);
          expect(asked, address).to.deep.equal(['hooks.attacker.example']);
          // The address itself in the URL: judged before connecting, nothing looked up.
          const literal = await transport.post(`http://[${address}]:${port}/hook`, {}, '{}');
          expect(literal.error, address).to.match(/^refused: the address .* carries /);
        } finally {
          transport.close();
        }
      }
      expect(receiver.received, 'no request reached the loopback receiver').to.have.length(0);
      // It was up all along.
      const open = createTransport({ allowPrivate: true, timeoutMs: 2000 });
      expect(await open.post(receiver.url, {}, '{}')).to.deep.equal({ statusCode: 200, error: null });
      open.close();
      expect(receiver.received).to.have.length(1);
    });

    it("an llm bot's client refuses each form before connecting", async () => {
      const port = (llm.address() as AddressInfo).port;
      const settings = { model: 'm', api_key: 'k', timeout_ms: 2000 };
      for (const [address, carried] of REFUSED) {
        asked.length = 0;
        const client = createLlmClient({ allowPrivate: false, resolve: resolvingTo(address) });
        try {
          const byName = await client.complete({ ...settings, base_url: `http://llm.attacker.example:${port}/v1` }, [{ role: 'user', content: 'hi' }]);
          expect(byName.kind === 'handoff' && byName.reason, address).to.match(new RegExp(`^llm\\.attacker\\.example: the address ${address} carries ${carried.replaceAll('.', '\\.')}, `));
          expect(asked, address).to.deep.equal(['llm.attacker.example']);
          const literal = await client.complete({ ...settings, base_url: `http://[${address}]:${port}/v1` }, [{ role: 'user', content: 'hi' }]);
          expect(literal.kind === 'handoff' && literal.reason, address).to.match(/^the base URL is not allowed: the address .* carries /);
        } finally {
          client.close();
        }
      }
      expect(llmRequests, 'no request reached the loopback model').to.equal(0);
      const open = createLlmClient({ allowPrivate: true });
      expect(await open.complete({ ...settings, base_url: `http://127.0.0.1:${port}/v1` }, [{ role: 'user', content: 'hi' }])).to.deep.equal({ kind: 'reply', content: 'hi' });
      open.close();
      expect(llmRequests).to.equal(1);
    });
  });
});
