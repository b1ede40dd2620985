import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import request from 'supertest';
import { parse } from 'yaml';
import { bundleAsyncApi } from '../src/http/asyncapi.ts';
import { loadContract } from '../src/http/contract.ts';
import { getHarness } from './support/harness.ts';
import { openPagesBrowser, type PagesBrowser } from './support/pages-browser.ts';

// Any absolute http(s) URL a page would load (src, href, url(...)); links people may click are allowed
// only to loopback. The pages must show without the network, so none may be needed.
const externalUrls = (html: string) => [...html.matchAll(/(?:src|href)\s*=\s*["'](https?:)?\/\/([^"'/]+)/gi)].map((m) => m[0]).filter((u) => !/\/\/(127\.0\.0\.1|localhost)/.test(u));

describe('the events docs (AsyncAPI) and the offline docs', function () {
  this.timeout(60_000);
  let server: Server;
  let base: string;
  let browser: PagesBrowser;

  before(async () => {
    server = createServer((await getHarness()).app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await openPagesBrowser();
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });
  afterEach(() => {
    expect(browser.external, 'requests that left loopback').to.deep.equal([]);
  });

  it('serves the AsyncAPI document at /api/asyncapi.yaml standing alone: the payloads it shares with chat.yaml are inside', async () => {
    const yaml = await request(server).get('/api/asyncapi.yaml').expect(200).expect('Content-Type', /application\/yaml/);
    expect(yaml.text).not.to.contain('chat.yaml');
    const document = parse(yaml.text);
    expect(document.asyncapi).to.match(/^3\./);
    expect(document.components.schemas.ConversationCreatedEvent.properties.type).to.deep.equal(loadContract().document.components.schemas.ConversationCreatedEvent.properties.type);
    const json = await request(server).get('/api/asyncapi.json').expect(200);
    expect(json.body).to.deep.equal(document);
  });

  it('bundling refuses a reference chat.yaml does not have, and a schema name both documents use', () => {
    const chat = { components: { schemas: { A: { type: 'object', properties: { b: { $ref: '#/components/schemas/B' } } }, B: { type: 'string' } } } };
    const bundled = bundleAsyncApi({ components: { messages: { m: { payload: { $ref: './chat.yaml#/components/schemas/A' } } } } }, chat);
    expect(bundled.components.messages.m.payload.$ref).to.equal('#/components/schemas/A');
    expect(bundled.components.schemas).to.deep.equal(chat.components.schemas);
    expect(() => bundleAsyncApi({ x: { $ref: './chat.yaml#/components/schemas/Nope' } }, chat)).to.throw(/Nope/);
    expect(() => bundleAsyncApi({ components: { schemas: { B: {} } }, x: { $ref: './chat.yaml#/components/schemas/A' } }, chat)).to.throw(/B is both/);
  });

  it('renders the events at /api/docs/events from local assets, linked from /api/docs', async () => {
    const docs = await browser.context.newPage();
    await docs.goto(`${base}/api/docs`);
    await docs.getByRole('link', { name: /Events \(WebSocket\)/ }).click();
    await docs.waitForURL(`${base}/api/docs/events`);
    // The viewer parsed the document: the channel's messages are listed by name.
    await docs.getByText('conversation.created').first().waitFor();
    expect(externalUrls(await request(server).get('/api/docs/events').then((r) => r.text))).to.deep.equal([]);
  });

  it('renders the REST docs at /api/docs without the network', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${base}/api/docs`);
    await page.getByText('Sign up').first().waitFor();
    expect(externalUrls(await request(server).get('/api/docs').then((r) => r.text))).to.deep.equal([]);
  });

  it('npm run docs writes pages that show from disk with no network: the REST contract and the events', async () => {
    const out = mkdtempSync(join(tmpdir(), 'chat-docs-'));
    try {
      execFileSync(process.execPath, ['scripts/docs.ts', '--out', out], { stdio: 'pipe' });
      for (const file of ['index.html', 'events.html']) expect(externalUrls(readFileSync(join(out, file), 'utf8')), file).to.deep.equal([]);
      const page = await browser.context.newPage();
      await page.goto(pathToFileURL(join(out, 'index.html')).href);
      await page.getByText('Sign up').first().waitFor();
      await page.getByRole('link', { name: /Events \(WebSocket\)/ }).click();
      await page.getByText('conversation.created').first().waitFor();
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
