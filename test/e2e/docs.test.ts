import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import type { Page, Request as BrowserRequest } from 'playwright-core';
import request from 'supertest';
import { parse } from 'yaml';
import { bundleAsyncApi } from '../../src/http/asyncapi.ts';
import { operationsOf } from '../../src/http/code-samples.ts';
import { loadContract } from '../../src/http/contract.ts';
import { statusOf } from '../../src/http/problem.ts';
import { REDOC_VERSION, Reference, servedEventsDocument, servedRestDocument } from '../../src/http/reference.ts';
import type { ErrorCode } from '../../src/shared/errors.ts';
import { errorsOf } from '../support/browser.ts';
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
/** The reference's text as a reader sees it, code blocks left out (a sample's template literal has backticks). */
const PROSE = `(() => {
  const style = document.createElement('style');
  style.textContent = '#redoc pre { display: none !important; }';
  document.head.append(style);
  const text = document.getElementById('redoc').innerText;
  style.remove();
  return text;
})()`;
/** What speaks to the service's contributors rather than to its users: their files, commands and tools. */
const CONTRIBUTOR_WORDS = /\b(?:src|test|scripts|generated|components|openapi)\/|\.test\.ts|npm run|\bPGlite\b|\bKysely\b|\bmocha\b|\bCI\b/;

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
    const errors = errorsOf(page);
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

  it('serves Redoc\'s bundle and the try-it panel\'s script compressed under 600 KB together, cached for good, with no address off this machine', async () => {
    const bundle = await request(server).get(BUNDLE).set('Accept-Encoding', 'br').expect(200).expect('Content-Encoding', 'br');
    expect(bundle.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(bundle.text).not.to.include('cdn.redoc.ly');
    const panel = await request(server).get(await tryItScriptUrl()).set('Accept-Encoding', 'br').expect(200).expect('Content-Encoding', 'br').expect('Content-Type', /javascript/);
    expect(panel.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(externalUrls(panel.text)).to.deep.equal([]);
    expect(panel.text).not.to.match(/https?:\/\//);
    expect(Number(bundle.headers['content-length']) + Number(panel.headers['content-length'])).to.be.below(600 * 1024);
  });

  /** The try-it panel's script, as the REST pages name it. */
  async function tryItScriptUrl(): Promise<string> {
    const page = await request(server).get('/api/docs/auth/register').set('Accept-Encoding', 'identity').expect(200);
    const url = /<script defer src="([^"]+)" data-operations="\/api\/docs\/reference\/try-it\.json" data-api="\/api" data-docs="\/api\/docs"><\/script>/.exec(page.text)?.[1];
    expect(url, 'the try-it script on the register page').to.match(/^\/api\/docs\/assets\/try-it-[0-9a-f]{12}\.js$/);
    return url!;
  }

  it('the try-it table has every operation at its page, with its parameters and the example body; the events pages have no try-it', async () => {
    const table = (await request(server).get('/api/docs/reference/try-it.json').expect(200)).body as Record<string, any>[];
    const contract = loadContract().document;
    expect(table.map((op) => `${op.method} ${op.path}`).sort()).to.deep.equal(operationsOf(contract).map((o) => `${o.method.toUpperCase()} ${o.path}`).sort());
    const register = table.find((op) => op.path === '/v1/auth/register')!;
    expect(register).to.include({ link: '/api/docs/auth/register', method: 'POST', auth: 'none', binary: false });
    expect(JSON.parse(register.body.example)).to.deep.equal(contract.paths['/v1/auth/register'].post.requestBody.content['application/json'].example);
    const list = table.find((op) => op.path === '/v1/conversations' && op.method === 'GET')!;
    expect(list).to.include({ link: '/api/docs/conversations/listconversations', auth: 'bearer' });
    expect(list.parameters.map((p: { name: string }) => p.name)).to.include.members(['status', 'cursor', 'limit']);
    const one = table.find((op) => op.path === '/v1/conversations/{id}' && op.method === 'GET')!;
    expect(one.parameters.find((p: { in: string }) => p.in === 'path')).to.include({ name: 'id', required: true });
    expect(table.find((op) => op.path === '/v1/files' && op.method === 'POST')!.body).to.deep.include({ type: 'multipart' });
    expect(table.find((op) => op.path === '/v1/widget/conversations' && op.method === 'POST')!.auth).to.equal('visitor');
    // Every row's page is a page of the reference.
    for (const op of table) expect(op.link, op.path).to.match(/^\/api\/docs\//);
    await request(server).get(table[0]!.link).expect(200);
    expect((await request(server).get('/api/docs/events').expect(200)).text).not.to.include('try-it');
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
    // This service alone: the contract's mock (a contributor's tool) is not a server a reader can call.
    expect(document.servers).to.deep.equal([{ url: '/api', description: 'This service' }]);
    // The contract itself holds no samples: they are made for the reference.
    expect(JSON.stringify(loadContract().document)).not.to.include('x-codeSamples');
  });

  it('the introduction is written for API users: each topic a caller needs, every error code with its status, nothing for contributors', async () => {
    const { info, tags } = loadContract().document as { info: { description: string }; tags: { name: string; description: string }[] };
    for (const topic of ['Server', 'Authentication', 'Errors', 'Pagination', 'Idempotency', 'Rate limits', 'Events and resume', 'Versioning']) {
      expect(info.description, topic).to.include(`**${topic}.**`);
    }
    // The table of codes: each code the contract declares, once, with the status the service answers it with.
    const codes = loadContract().document.components.schemas.ErrorCode.enum as ErrorCode[];
    const table = new Map([...info.description.matchAll(/^\| `(ERR_[A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));
    expect([...table.keys()].sort(), 'the codes in the introduction\'s table').to.deep.equal([...codes].sort());
    for (const code of codes) expect(table.get(code), code).to.equal(statusOf(code));
    for (const text of [{ name: 'info.description', description: info.description }, ...tags]) {
      expect(CONTRIBUTOR_WORDS.exec(text.description)?.[0], `${text.name}: words for contributors`).to.be.undefined;
    }
  });

  it('the tags are described for API users, and each event a tag names links to that event in the events reference', async () => {
    const events = (await request(server).get('/api/asyncapi.json').expect(200)).body;
    const messages = new Map(Object.entries<{ name: string }>(events.components.messages).map(([key, m]) => [key.toLowerCase(), m.name]));
    let linked = 0;
    for (const tag of loadContract().document.tags as { name: string; description: string }[]) {
      expect(tag.description.length, tag.name).to.be.above(300);
      for (const [, name, page, key] of tag.description.matchAll(/\[`([a-z_.]+)`\]\((\/api\/docs\/events[^)#]*)#channels\/events\/messages&m=([a-z]+)\)/g)) {
        expect(messages.get(key!), `${tag.name}: ${name}`).to.equal(name);
        expect(page).to.equal('/api/docs/events/channels/events');
        linked++;
      }
    }
    expect(linked).to.be.above(10);
    await request(server).get('/api/docs/events/channels/events').expect(200);
  });

  it('every link in the served getting-started page and in the introduction answers: relative ones on this service, none to another loopback address', async () => {
    const document = (await request(server).get('/api/docs/reference/openapi.json').expect(200)).body;
    const gettingStarted = document.tags.find((t: { name: string }) => t.name === 'getting-started').description as string;
    // Each text with the page it shows on: a relative link resolves against that page's URL, as a browser resolves it.
    const texts = [
      { page: `${base}/api/docs/getting-started`, markdown: gettingStarted },
      { page: `${base}/api/docs`, markdown: document.info.description as string },
    ];
    const broken: string[] = [];
    let fetched = 0;
    for (const { page, markdown } of texts) {
      const hrefs = [...markdown.matchAll(/\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g), ...markdown.matchAll(/<(https?:\/\/[^>\s]+)>/g)].map((m) => m[1]!);
      for (const href of hrefs) {
        const url = new URL(href, page);
        if (url.origin === base) {
          const res = await request(server).get(`${url.pathname}${url.search}`);
          fetched++;
          if (res.status !== 200) broken.push(`${href} on ${page}: ${res.status}`);
        } else if (/^(127\.|localhost$|\[::1\]$|0\.0\.0\.0$)/.test(url.hostname)) {
          // A link to a port on the reader's own machine works only where that service runs.
          broken.push(`${href} on ${page}: a loopback address other than the page's own`);
        } else {
          // Another site's: not fetched (tests stay on loopback), but it must be a web address.
          if (!/^https?:$/.test(url.protocol)) broken.push(`${href} on ${page}: not a web address`);
        }
      }
    }
    expect(broken, 'links that do not answer').to.deep.equal([]);
    expect(fetched, 'links on this service fetched').to.be.at.least(2);
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

  it('in chromium: the introduction (its codes a table) and every page of the getting-started guide render with no console error and no literal Markdown', async () => {
    const contract = loadContract();
    const reference = new Reference(
      { rest: servedRestDocument(contract.document, contract.basePath), events: servedEventsDocument(contract.document) },
      { basePaths: { rest: '/api/docs', events: '/api/docs/events' }, bundleUrl: BUNDLE, documentUrls: { rest: '', events: '' }, nav: [], router: 'history' },
    );
    // The guide's pages: the page and each step (Redoc gives each ## section a page of its own).
    const guide = (await reference.pages('rest')).filter((path) => path === '/api/docs/getting-started' || path.startsWith('/api/docs/getting-started/'));
    expect(guide, 'the getting-started pages').to.include('/api/docs/getting-started/7.-resume-and-receive-the-answer');
    const found: string[] = [];
    for (const path of ['/api/docs', ...guide]) {
      const { page, errors } = await open(`${base}${path}`);
      try {
        await page.waitForFunction(HYDRATED, undefined, WAIT);
        if (path === '/api/docs') await page.locator('#redoc table').filter({ hasText: 'ERR_CONVERSATION_CLOSED' }).first().waitFor(WAIT);
        found.push(...literalMarkdown(await page.evaluate<string>(PROSE)).map((line) => `${path}: ${line}`));
        expect(errors, path).to.deep.equal([]);
      } finally {
        await page.close();
      }
    }
    expect(found, 'Markdown shown as text in the introduction or the guide').to.deep.equal([]);
  });

  it('in chromium: every page of the events reference, and every message in it, renders with no console error and no literal Markdown', async () => {
    const contract = loadContract();
    // The reference's own list of the events' pages (as the service's router knows them).
    const reference = new Reference(
      { rest: servedRestDocument(contract.document, contract.basePath), events: servedEventsDocument(contract.document) },
      { basePaths: { rest: '/api/docs', events: '/api/docs/events' }, bundleUrl: BUNDLE, documentUrls: { rest: '', events: '' }, nav: [], router: 'history' },
    );
    const pages = await reference.pages('events');
    expect(pages).to.include.members(['/api/docs/events', '/api/docs/events/channels/events']);
    const found: string[] = [];
    // The messages' own links (a message's, not a field's of its payload), wherever a page lists them.
    const anchors = new Set<string>();
    for (const path of pages) {
      const { page, errors } = await open(`${base}${path}`);
      try {
        await page.waitForFunction(HYDRATED, undefined, WAIT);
        const text = await page.locator('#redoc').innerText();
        found.push(...literalMarkdown(text).map((line) => `${path}: ${line}`));
        for (const href of await page.locator('#redoc a[href*="&m="]').evaluateAll((links) => links.map((a) => a.getAttribute('href')!))) {
          if (/#channels\/events\/messages&m=[a-z]+$/.test(href)) anchors.add(href);
        }
        expect(errors, path).to.deep.equal([]);
      } finally {
        await page.close();
      }
    }
    // Each message, as its own link shows it: the channel's page with the message chosen in the hash.
    const messages = Object.entries<{ name: string; summary?: string; description?: string }>(reference.document('events').components.messages);
    const channel = '/api/docs/events/channels/events';
    const { page, errors } = await open(`${base}${channel}`);
    try {
      await page.waitForFunction(HYDRATED, undefined, WAIT);
      expect([...anchors].sort(), 'the pages link every message').to.deep.equal(messages.map(([key]) => `${channel}#channels/events/messages&m=${key.toLowerCase()}`).sort());
      for (const [key, message] of messages) {
        await page.evaluate(`location.hash = ${JSON.stringify(`channels/events/messages&m=${key.toLowerCase()}`)}`);
        // Shown once the chosen message heads the list, its summary under its name.
        const shown = `messages:\n\n${message.name}\n${(message.summary ?? message.description ?? '').replace(/\s+/g, ' ').slice(0, 20)}`;
        await page.waitForFunction(`document.getElementById('redoc').innerText.includes(${JSON.stringify(shown)})`, undefined, WAIT);
        const text = await page.locator('#redoc').innerText();
        found.push(...literalMarkdown(text).map((line) => `${message.name}: ${line}`));
      }
      expect(errors, 'console errors while showing the messages').to.deep.equal([]);
    } finally {
      await page.close();
    }
    expect([...new Set(found)], 'Markdown shown as text in the events reference').to.deep.equal([]);
  });

  it('in chromium, try-it: signs up on the register page (201), then the page\'s login form fills the token and GET /v1/conversations answers 200 with it, all on this service', async () => {
    const sent: { url: string; method: string; authorization?: string }[] = [];
    const record = (r: BrowserRequest) => void sent.push({ url: r.url(), method: r.method(), authorization: r.headers().authorization });
    browser.context.on('request', record);
    try {
      const { page, errors } = await open(`${base}/api/docs/auth/register`);
      await page.waitForFunction(HYDRATED, undefined, WAIT);
      const signUp = page.getByRole('region', { name: 'Try it: POST /v1/auth/register' });
      const body = signUp.getByLabel('Body (JSON)');
      await body.waitFor(WAIT);
      // Prefilled from the operation's example; the address made unique.
      expect(JSON.parse(await body.inputValue())).to.include({ email: 'ada@example.com' });
      const email = `try-it-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
      await body.fill(JSON.stringify({ email, password: 'correct horse battery', name: 'Ada Lovelace', tenant_name: 'Try-it Engines' }, null, 2));
      await signUp.getByRole('button', { name: 'Send' }).click();
      await signUp.locator('.try-it-status[data-status="201"]').waitFor(WAIT);
      expect(await signUp.locator('.try-it-body').innerText()).to.include('"access_token"');
      expect(await signUp.locator('.try-it-headers').innerText()).to.match(/content-type: application\/json/);

      // To the conversations' list through the reference's own navigation (no reload): its panel follows.
      await page.locator('#redoc').getByRole('link', { name: 'conversations', exact: true }).first().click();
      await page.locator('#redoc').getByRole('link', { name: 'List conversations' }).first().click();
      await page.waitForURL(`${base}/api/docs/conversations/listconversations`);
      const list = page.getByRole('region', { name: 'Try it: GET /v1/conversations' });
      await list.waitFor(WAIT);
      const login = list.getByRole('form', { name: 'Log in for try-it' });
      await login.getByLabel('E-mail').fill(email);
      await login.getByLabel('Password').fill('correct horse battery');
      await login.getByRole('button', { name: 'Log in' }).click();
      await login.getByText(`Logged in as ${email}`).waitFor(WAIT);
      const token = await list.getByLabel('Access token').inputValue();
      expect(token).to.match(/^ey/);
      await list.getByRole('form', { name: 'Request' }).getByRole('button', { name: 'Send' }).click();
      await list.locator('.try-it-status[data-status="200"]').waitFor(WAIT);
      expect(JSON.parse(await list.locator('.try-it-body').innerText())).to.include.keys('data', 'pagination');

      const calls = sent.filter((r) => new URL(r.url).pathname.startsWith('/api/v1/'));
      expect(calls.map((r) => `${r.method} ${new URL(r.url).pathname}`)).to.deep.equal(['POST /api/v1/auth/register', 'POST /api/v1/auth/login', 'GET /api/v1/conversations']);
      expect(calls.every((r) => r.url.startsWith(`${base}/`)), 'every call on the page\'s own origin').to.be.true;
      expect(calls[2]!.authorization).to.equal(`Bearer ${token}`);
      expect(calls[0]!.authorization).to.be.undefined;

      // The token is kept for the tab: a reload finds it filled in.
      await page.reload();
      await page.getByRole('region', { name: 'Try it: GET /v1/conversations' }).getByLabel('Access token').waitFor(WAIT);
      expect(await page.getByRole('region', { name: 'Try it: GET /v1/conversations' }).getByLabel('Access token').inputValue()).to.equal(token);
      expect(errors).to.deep.equal([]);
    } finally {
      browser.context.off('request', record);
    }
  });

  it('npm run docs writes pages that show from disk with no network: the getting started, the REST contract and the events', async () => {
    const out = mkdtempSync(join(tmpdir(), 'chat-docs-'));
    try {
      execFileSync(process.execPath, ['scripts/docs.ts', '--out', out], { stdio: 'pipe' });
      for (const file of ['index.html', 'events.html']) expect(externalUrls(readFileSync(join(out, file), 'utf8')), file).to.deep.equal([]);
      // The contract's links to the service's reference are links between the files (in the document the page holds).
      const index = readFileSync(join(out, 'index.html'), 'utf8');
      expect(index).to.include('](events.html#/channels/events)');
      expect(index).not.to.include('](/api/docs');
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
