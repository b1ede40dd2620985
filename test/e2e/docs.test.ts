import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { parse } from 'yaml';
import { bundleAsyncApi } from '../../src/http/asyncapi.ts';
import { operationsOf } from '../../src/http/code-samples.ts';
import { loadContract } from '../../src/http/contract.ts';
import { REDOC_VERSION } from '../../src/http/reference.ts';
import { getHarness } from '../support/harness.ts';
import { openPagesBrowser, type PagesBrowser } from '../support/pages-browser.ts';

// Any absolute http(s) URL a page would load (a src, a <link>'s href); links people may click are not
// loads. The pages must show without the network, so none may be needed.
const externalUrls = (html: string) => [...html.matchAll(/(?:src|<link[^>]*href)\s*=\s*["'](https?:)?\/\/([^"'/]+)/gi)].map((m) => m[0]).filter((u) => !/\/\/(127\.0\.0\.1|localhost)/.test(u));
const textOf = (html: string) => html.replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/g, '').replace(/<[^>]+>/g, ' ').replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/\s+/g, ' ');
const WAIT = { timeout: 60_000 };
/** True in the page once Redoc's bundle has hydrated the server's markup (React marks its root). */
const HYDRATED = `Object.keys(document.getElementById('redoc') ?? {}).some((k) => k.startsWith('__reactContainer'))`;
const BUNDLE = `/api/docs/assets/redoc-${REDOC_VERSION}.js`;

/** Text a reader sees that is Markdown left unrendered: backticks, `**`, `](`, a heading's `#`. */
const literalMarkdown = (text: string) => text.split('\n').filter((line) => /`|\*\*|\]\(|^#{1,6} /.test(line));

describe('the API reference (Redoc: REST, events, getting started) and the offline docs', function () {
  this.timeout(180_000);
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

  /** A page with its console errors and uncaught errors kept; hydrated once the bundle's module ran. */
  async function open(url: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    return { page, errors };
  }

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

  it('renders each page on the server: an operation is readable in the HTML itself, compressed; unknown pages are 404', async () => {
    const page = await request(server).get('/api/docs/auth/register').set('Accept-Encoding', 'identity').expect(200).expect('Content-Type', /text\/html/);
    expect(page.headers['cache-control']).to.equal('no-cache');
    expect(page.text).to.match(/<h2[^>]*>(<[^>]+>)*Sign up/);
    expect(textOf(page.text)).to.include('Creates a user and a tenant owned by them').and.match(/curl -sS -X POST .*\/v1\/auth\/register/);
    expect(page.text).to.include(`<link rel="modulepreload" href="${BUNDLE}">`);
    expect(externalUrls(page.text)).to.deep.equal([]);
    const compressed = await request(server).get('/api/docs/auth/register').set('Accept-Encoding', 'gzip, deflate, br').expect(200).expect('Content-Encoding', 'br');
    expect(Number(compressed.headers['content-length'])).to.be.below(page.text.length / 4);
    expect(compressed.text).to.equal(page.text);
    await request(server).get('/api/docs/auth/nothing-here').expect(404);
    await request(server).get('/api/docs/assets/redoc-0.0.0.js').expect(404);
    // The events' pages live under /api/docs/events; the REST tag of the same name moved out of their way.
    expect((await request(server).get('/api/docs/events').expect(200)).text).to.include('The event stream');
    expect(textOf((await request(server).get('/api/docs/event-feed/listevents').expect(200)).text)).to.include('GET /v1/events');
  });

  it('serves Redoc\'s bundle compressed under 600 KB, cached for good, with no address off this machine', async () => {
    const bundle = await request(server).get(BUNDLE).set('Accept-Encoding', 'br').expect(200).expect('Content-Encoding', 'br');
    expect(bundle.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(Number(bundle.headers['content-length'])).to.be.below(600 * 1024);
    expect(bundle.text).not.to.include('cdn.redoc.ly');
  });

  it('the served document has a curl and a TypeScript sample on every operation, and the getting-started page first', async () => {
    const document = (await request(server).get('/api/docs/reference/openapi.json').expect(200)).body;
    const operations = operationsOf(document);
    expect(operations).to.have.length(operationsOf(loadContract().document).length);
    for (const { operation } of operations) {
      expect(operation['x-codeSamples'].map((s: { lang: string }) => s.lang), operation.operationId).to.deep.equal(['curl', 'TypeScript']);
    }
    expect(document.tags[0]).to.include({ name: 'getting-started', 'x-displayName': 'Getting started' });
    expect(document.tags[0].description).to.equal(readFileSync('docs/getting-started.md', 'utf8').replace(/^# .*\n+/, ''));
    // The contract itself holds no samples: they are made for the reference.
    expect(JSON.stringify(loadContract().document)).not.to.include('x-codeSamples');
  });

  it('in chromium: an operation, the getting-started page and the events render with no console error and no literal Markdown, one navigation between them', async () => {
    const { page, errors } = await open(`${base}/api/docs/auth/register`);
    await page.getByRole('heading', { name: 'Sign up' }).waitFor(WAIT);
    // Hydrated (Redoc's code in the browser): the sample's language menu opens, and the SDK's sample shows.
    await page.waitForFunction(HYDRATED, undefined, WAIT);
    await page.locator('#redoc').getByText('curl', { exact: true }).first().click();
    await page.getByText('TypeScript (SDK)').first().click();
    await page.getByText("import { ChatClient, ok } from '@customer-chat/client';").first().waitFor(WAIT);

    await page.getByRole('navigation', { name: 'API reference' }).getByRole('link', { name: 'Getting started' }).click();
    await page.getByRole('heading', { name: /1\. Register/ }).first().waitFor(WAIT);
    await page.getByRole('navigation', { name: 'API reference' }).getByRole('link', { name: 'Events (WebSocket)' }).click();
    await page.waitForURL(`${base}/api/docs/events`);
    await page.getByRole('heading', { name: 'Customer Chat events' }).first().waitFor(WAIT);
    await page.waitForFunction(HYDRATED, undefined, WAIT);
    await page.getByText('The event stream').first().click();
    await page.getByText('conversation.created').first().waitFor(WAIT);
    const text = await page.locator('#redoc main, #redoc').first().innerText();
    expect(literalMarkdown(text), 'Markdown shown as text on the events page').to.deep.equal([]);
    expect(errors).to.deep.equal([]);
  });

  it('npm run docs writes pages that show from disk with no network: the getting started, the REST contract and the events', async () => {
    const out = mkdtempSync(join(tmpdir(), 'chat-docs-'));
    try {
      execFileSync(process.execPath, ['scripts/docs.ts', '--out', out], { stdio: 'pipe' });
      for (const file of ['index.html', 'events.html']) expect(externalUrls(readFileSync(join(out, file), 'utf8')), file).to.deep.equal([]);
      const { page, errors } = await open(pathToFileURL(join(out, 'index.html')).href);
      await page.getByRole('navigation', { name: 'API reference' }).getByRole('link', { name: 'Getting started' }).click();
      await page.getByRole('heading', { name: /1\. Register/ }).first().waitFor(WAIT);
      await page.getByRole('navigation', { name: 'API reference' }).getByRole('link', { name: 'Events (WebSocket)' }).click();
      await page.getByRole('heading', { name: 'Customer Chat events' }).first().waitFor(WAIT);
      expect(errors).to.deep.equal([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
