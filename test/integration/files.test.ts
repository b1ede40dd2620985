import { createHash, createHmac } from 'node:crypto';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import type { Express } from 'express';
import { sql } from 'kysely';
import S3rver from 's3rver';
import request from 'supertest';
import * as fileRepo from '../../src/files/file.repository.ts';
import { MAX_FILE_BYTES } from '../../src/files/file.service.ts';
import { hashThreadForTests } from '../../src/files/offthread-hash.ts';
import { type FileStorage, LocalStorage, S3Storage } from '../../src/files/storage.ts';
import { orphanFileJob } from '../../src/retention/retention.jobs.ts';
import { newId } from '../../src/shared/ids.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createConversation, createTenant, eventsOf, login, type TestTenant } from '../support/factories.ts';
import { TEST_CONFIG, getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const SIGNING_KEY = 'files-test-signing-key';
const SITE = 'https://shop.example';
const HOUR = 3600_000;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const asVisitor = (token: string) => ({ Authorization: `Bearer ${token}`, Origin: SITE });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
// The first bytes of a PNG: enough for the type to be sniffed from them.
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex'), Buffer.alloc(200, 7)]);

/** A multipart body of parts, by hand: tests need bodies that supertest would not build. */
function multipart(parts: { name: string; filename?: string; content: Buffer | string }[], boundary = 'test-boundary-1234') {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    const type = part.filename !== undefined ? 'Content-Type: application/octet-stream\r\n' : '';
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(part.content), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

interface RawAnswer {
  status: number;
  body: Record<string, any>;
  /** Bytes of file content the client had written when the answer came. */
  sentWhenAnswered: number;
}

/**
 * Sends a multipart upload from a generator of file bytes, chunked (no Content-Length), and keeps
 * writing until the server answers or the generator ends: an answer that comes early stops the sending.
 */
function rawUpload(base: string, headers: Record<string, string>, fileBytes: Iterable<Buffer>, options: { filename?: string } = {}): Promise<RawAnswer> {
  const boundary = 'raw-boundary-5678';
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = httpRequest(`${base}/api/v1/files`, { method: 'POST', headers: { ...headers, 'Content-Type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
      answered = true;
      const sentWhenAnswered = sent;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || '{}'), sentWhenAnswered }));
      res.on('error', reject);
    });
    // Writes after the answer may fail (the server stops reading): that is the point, not an error.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    (async () => {
      const write = (chunk: Buffer | string) => new Promise<void>((done) => (req.write(chunk) ? done() : req.once('drain', done)));
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${options.filename ?? 'big.bin'}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      for (const chunk of fileBytes) {
        if (answered || req.destroyed) return;
        await write(chunk);
        sent += chunk.length;
      }
      if (answered || req.destroyed) return;
      req.end(`\r\n--${boundary}--\r\n`);
    })().catch(() => undefined);
  });
}

function* bytes(total: number, chunk = 256 * 1024): Generator<Buffer> {
  const block = Buffer.alloc(chunk, 0x61);
  for (let sent = 0; sent < total; sent += chunk) yield total - sent >= chunk ? block : block.subarray(0, total - sent);
}

interface Backend {
  name: 'local' | 's3';
  storage: FileStorage;
  close(): Promise<void>;
}

async function localBackend(): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'files-test-'));
  return { name: 'local', storage: new LocalStorage(dir), close: () => rm(dir, { recursive: true, force: true }) };
}

async function s3Backend(): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'files-test-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: join(dir, 's3'), configureBuckets: [{ name: 'chat-files', configs: [] }] });
  const { port } = (await server.run()) as AddressInfo;
  const storage = new S3Storage({
    bucket: 'chat-files',
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    region: 'us-east-1',
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    pathStyle: true,
    spoolDir: join(dir, 'spool'),
  });
  return {
    name: 's3',
    storage,
    close: async () => {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function listen(app: Express): Promise<{ server: Server; base: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function widgetSession(base: string, t: TestTenant): Promise<{ token: string; visitorId: string; widgetId: string }> {
  const auth = bearer(t.owner.accessToken);
  const widget = (await request(base).post('/api/v1/widgets').set(auth).send({ name: 'Site' }).expect(201)).body;
  await request(base).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
  const session = await visitorOf(base, widget.id);
  return { ...session, widgetId: widget.id };
}

async function visitorOf(base: string, widgetId: string) {
  const res = await request(base).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widgetId, page_url: `${SITE}/` }).expect(201);
  return { token: res.body.visitor_token as string, visitorId: res.body.visitor_id as string };
}

for (const makeBackend of [localBackend, s3Backend]) {
  describe(`files on ${makeBackend === localBackend ? 'local disk' : 'S3 (s3rver on loopback)'}`, function () {
    this.timeout(60_000);
    let backend: Backend;
    let server: Server;
    let base: string;
    let t: TestTenant;

    before(async () => {
      backend = await makeBackend();
      const h = await getHarness();
      ({ server, base } = await listen(h.appWith({}, { files: { storage: backend.storage, signingKey: SIGNING_KEY } })));
      t = await createTenant();
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await backend.close();
    });

    const stored = () => backend.storage.list().then((keys) => keys.sort());
    const upload = (content: Buffer, filename: string, token = t.owner.accessToken) =>
      request(base).post('/api/v1/files').set(bearer(token)).attach('file', content, filename);

    it('stores an upload, answers its metadata, and downloads the same bytes through the URL', async () => {
      const res = await upload(PNG, 'photo.png').expect(201);
      expect(res.body).to.include({ name: 'photo.png', content_type: 'image/png', size: PNG.length, sha256: sha256(PNG), conversation_id: null });
      expect(res.body.uploaded_by).to.deep.equal({ type: 'user', id: t.owner.userId });
      expect(await stored()).to.include(`${t.tenantId}/${res.body.id}`);

      const meta = await request(base).get(`/api/v1/files/${res.body.id}`).set(bearer(t.owner.accessToken)).expect(200);
      expect(meta.body).to.deep.include({ id: res.body.id, sha256: sha256(PNG) });
      const expiresAt = Date.parse(meta.body.expires_at);
      expect(expiresAt - Date.now()).to.be.within(590_000, 600_000);
      const download = await fetch(meta.body.url);
      expect(download.status).to.equal(200);
      const body = Buffer.from(await download.arrayBuffer());
      expect(sha256(body)).to.equal(sha256(PNG));
      expect(body.equals(PNG)).to.equal(true);
      expect(download.headers.get('content-disposition')).to.match(/^attachment; filename="photo.png"/);
      expect(download.headers.get('content-type')).to.equal('image/png');
      if (backend.name === 'local') {
        expect(download.headers.get('x-content-type-options')).to.equal('nosniff');
        expect(meta.body.url).to.match(new RegExp(`^${base}/api/v1/files/${res.body.id}/content\\?expires=\\d+&signature=[\\w-]{43}$`));
      } else {
        // s3rver checks neither signatures nor expiry (DESIGN 11): the URL must carry the client's.
        const url = new URL(meta.body.url);
        expect(url.pathname).to.equal(`/chat-files/${t.tenantId}/${res.body.id}`);
        expect(url.searchParams.get('X-Amz-Algorithm')).to.equal('AWS4-HMAC-SHA256');
        expect(url.searchParams.get('X-Amz-Expires')).to.equal('600');
        expect(url.searchParams.get('X-Amz-Signature')).to.match(/^[0-9a-f]{64}$/);
        expect(url.searchParams.get('X-Amz-Credential')).to.match(/^S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request$/);
        expect(url.searchParams.get('response-content-disposition')).to.match(/^attachment;/);
      }
    });

    it('sniffs the type from the bytes: an HTML or SVG upload is text, downloaded as an attachment', async () => {
      const html = Buffer.from('<html><body><script>alert(document.cookie)</script></body></html>');
      const res = await request(base).post('/api/v1/files').set(bearer(t.owner.accessToken)).attach('file', html, { filename: 'page.html', contentType: 'text/html' }).expect(201);
      expect(res.body.content_type).to.equal('text/plain; charset=utf-8');
      const binary = await upload(Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0]), 'x.svg').expect(201);
      expect(binary.body.content_type).to.equal('application/octet-stream');
      const meta = await request(base).get(`/api/v1/files/${res.body.id}`).set(bearer(t.owner.accessToken)).expect(200);
      const download = await fetch(meta.body.url);
      expect(download.headers.get('content-disposition')).to.match(/^attachment; filename="page.html"/);
      expect(Buffer.from(await download.arrayBuffer()).equals(html)).to.equal(true);
      if (backend.name === 'local') {
        // The service's own link says nosniff and sandboxes the bytes: the sniffed type can stand.
        expect(download.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
        expect(download.headers.get('x-content-type-options')).to.equal('nosniff');
      } else {
        // A store's link cannot say nosniff: it is signed to serve anything a browser could run as bytes.
        expect(download.headers.get('content-type')).to.equal('application/octet-stream');
        expect(new URL(meta.body.url).searchParams.get('response-content-type')).to.equal('application/octet-stream');
      }
    });

    it('a store link keeps the type only of images, audio, video and PDF; SVG, XML and JavaScript are bytes', async () => {
      const cases: [content: Buffer, name: string, stored: string, served: string][] = [
        [PNG, 'p.png', 'image/png', 'image/png'],
        [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n', 'latin1'), 'doc.pdf', 'application/pdf', 'application/pdf'],
        [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'x.svg', '', 'application/octet-stream'],
        [Buffer.from('<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>'), 'x.xml', '', 'application/octet-stream'],
        [Buffer.from('alert(document.cookie)'), 'x.js', 'text/plain; charset=utf-8', 'application/octet-stream'],
      ];
      for (const [content, name, stored, served] of cases) {
        const res = await upload(content, name).expect(201);
        if (stored) expect(res.body.content_type, name).to.equal(stored);
        const meta = await request(base).get(`/api/v1/files/${res.body.id}`).set(bearer(t.owner.accessToken)).expect(200);
        const download = await fetch(meta.body.url);
        expect(download.headers.get('content-disposition'), name).to.match(/^attachment;/);
        expect(download.headers.get('content-type'), name).to.equal(backend.name === 'local' ? res.body.content_type : served);
        await download.arrayBuffer();
      }
    });

    it('accepts exactly 20 MiB', async () => {
      const content = Buffer.alloc(MAX_FILE_BYTES, 0x62);
      const res = await upload(content, 'exact.bin').expect(201);
      expect(res.body).to.include({ size: 20 * 1024 * 1024, sha256: sha256(content) });
      const meta = await request(base).get(`/api/v1/files/${res.body.id}`).set(bearer(t.owner.accessToken)).expect(200);
      const download = Buffer.from(await (await fetch(meta.body.url)).arrayBuffer());
      expect(download.length).to.equal(MAX_FILE_BYTES);
      expect(sha256(download)).to.equal(sha256(content));
    });

    it('refuses 20 MiB + 1 with 413 and keeps nothing, with or without a Content-Length', async () => {
      const before = await stored();
      const declared = multipart([{ name: 'file', filename: 'big.bin', content: Buffer.alloc(MAX_FILE_BYTES + 1, 0x63) }]);
      const res = await request(base).post('/api/v1/files').set(bearer(t.owner.accessToken)).set('Content-Type', declared.contentType).send(declared.body);
      expectProblem(res, 413, 'ERR_PAYLOAD_TOO_LARGE');
      expect(await stored()).to.deep.equal(before);

      const chunked = await rawUpload(base, bearer(t.owner.accessToken), bytes(MAX_FILE_BYTES + 1));
      expect(chunked.status).to.equal(413);
      expect(chunked.body.code).to.equal('ERR_PAYLOAD_TOO_LARGE');
      expect(await stored()).to.deep.equal(before);
      await eventually(async () => hashThreadForTests().sessions() === 0, 'the refused uploads hold no hashing session');
    });

    it('answers 413 as soon as the limit is crossed, not when the body ends', async () => {
      const before = await stored();
      // A body that would go on for 200 MiB: the answer must come while it is still being sent.
      const res = await rawUpload(base, bearer(t.owner.accessToken), bytes(200 * 1024 * 1024));
      expect(res.status).to.equal(413);
      expect(res.sentWhenAnswered).to.be.below(MAX_FILE_BYTES + 16 * 1024 * 1024);
      expect(await stored()).to.deep.equal(before);
    });

    it('refuses bad multipart bodies with 400 naming the problem, and keeps nothing', async () => {
      const before = await stored();
      const send = (body: Buffer, contentType: string) =>
        request(base).post('/api/v1/files').set(bearer(t.owner.accessToken)).set('Content-Type', contentType).send(body);
      const cases: [string, { body: Buffer; contentType: string }, RegExp][] = [
        ['empty file', multipart([{ name: 'file', filename: 'empty.txt', content: '' }]), /empty/],
        ['no file part', multipart([{ name: 'conversation_id', content: newId('conversation') }]), /"file" is missing/],
        ['two files', multipart([{ name: 'file', filename: 'a.txt', content: 'aaa' }, { name: 'file', filename: 'b.txt', content: 'bbb' }]), /only one file/],
        ['a file in another part', multipart([{ name: 'attachment', filename: 'a.txt', content: 'aaa' }]), /unexpected file part "attachment"/],
        ['an unknown field', multipart([{ name: 'file', filename: 'a.txt', content: 'aaa' }, { name: 'colour', content: 'red' }]), /unexpected part "colour"/],
        ['file as a text field', multipart([{ name: 'file', content: 'aaa' }]), /must be a file/],
        ['a bad conversation id', multipart([{ name: 'conversation_id', content: 'conv_nope' }, { name: 'file', filename: 'a.txt', content: 'aaa' }]), /conversation_id/],
        ['truncated', (() => {
          const m = multipart([{ name: 'file', filename: 'a.txt', content: Buffer.alloc(100_000, 1) }]);
          return { body: m.body.subarray(0, 60_000), contentType: m.contentType };
        })(), /malformed or cut short/],
        ['garbage', { body: Buffer.from('this is not multipart at all'), contentType: 'multipart/form-data; boundary=xyz' }, /malformed or cut short|"file" is missing/],
        ['no boundary', { body: Buffer.from('--x\r\n'), contentType: 'multipart/form-data' }, /cannot be read/],
      ];
      for (const [label, { body, contentType }, detail] of cases) {
        const problem = expectProblem(await send(body, contentType), 400, 'ERR_VALIDATION');
        expect(`${problem.detail} ${JSON.stringify(problem.errors)}`, label).to.match(detail);
      }
      const json = expectProblem(await request(base).post('/api/v1/files').set(bearer(t.owner.accessToken)).send({ file: 'x' }), 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
      expect(json.detail).to.equal('Send the body as multipart/form-data');
      expect(await stored()).to.deep.equal(before);
    });

    it('a file part after a refused field is drained, not stored or hashed', async () => {
      const before = await stored();
      // Long enough to go on past the chunk in which the field is refused.
      const m = multipart([{ name: 'colour', content: 'red' }, { name: 'file', filename: 'late.bin', content: Buffer.alloc(1024 * 1024, 7) }]);
      const res = await request(base).post('/api/v1/files').set(bearer(t.owner.accessToken)).set('Content-Type', m.contentType).send(m.body);
      expect(expectProblem(res, 400, 'ERR_VALIDATION').detail).to.match(/unexpected part "colour"/);
      await eventually(async () => hashThreadForTests().sessions() === 0, 'no hashing session is left open');
      expect(await stored()).to.deep.equal(before);
    });

    it('leaves nothing behind when the client disconnects mid-upload', async () => {
      const before = await stored();
      const boundary = 'cut-boundary';
      const req = httpRequest(`${base}/api/v1/files`, {
        method: 'POST',
        headers: { ...bearer(t.owner.accessToken), 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(10 * 1024 * 1024) },
      });
      req.on('error', () => undefined);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`);
      req.write(Buffer.alloc(1024 * 1024, 0x64));
      // The sentinel that the upload is under way: its partial object or spooled file exists.
      await eventually(async () => (await stored()).length > before.length, 'the partial upload shows in storage');
      req.destroy();
      await eventually(async () => JSON.stringify(await stored()) === JSON.stringify(before), 'storage is as it was before the upload');
      await eventually(async () => hashThreadForTests().sessions() === 0, 'the cut-off upload holds no hashing session');
    });

    it('deletes files never attached after 24 hours, objects first, and keeps attached and young ones', async () => {
      const { database } = await getHarness();
      const conv = await createConversation(t);
      const orphan = (await upload(Buffer.from('orphan'), 'orphan.txt').expect(201)).body;
      const attached = (await upload(Buffer.from('attached'), 'attached.txt').expect(201)).body;
      const young = (await upload(Buffer.from('young'), 'young.txt').expect(201)).body;
      await request(base).post('/api/v1/messages').set(bearer(t.owner.accessToken)).send({ conversation_id: conv.id, content: 'see attached', attachments: [attached.id] }).expect(201);
      await database.asSystem((trx) =>
        sql`update files set created_at = now() - interval '25 hours' where id in (${sql.join([orphan.id, attached.id])})`.execute(trx),
      );
      const bytesBefore = await database.withTenant(t.tenantId, (trx) => fileRepo.storageBytes(trx, t.tenantId));
      const job = orphanFileJob(backend.storage, { intervalMs: HOUR, ageMs: 24 * HOUR, batch: 2 });
      const result = (await job.run(database, new AbortController().signal)) as { deleted: number };
      expect(result.deleted).to.be.at.least(1);
      const keys = await stored();
      expect(keys).not.to.include(`${t.tenantId}/${orphan.id}`);
      expect(keys).to.include.members([`${t.tenantId}/${attached.id}`, `${t.tenantId}/${young.id}`]);
      expectProblem(await request(base).get(`/api/v1/files/${orphan.id}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
      await request(base).get(`/api/v1/files/${attached.id}`).set(bearer(t.owner.accessToken)).expect(200);
      await request(base).get(`/api/v1/files/${young.id}`).set(bearer(t.owner.accessToken)).expect(200);
      const bytesAfter = await database.withTenant(t.tenantId, (trx) => fileRepo.storageBytes(trx, t.tenantId));
      expect(bytesBefore - bytesAfter).to.equal('orphan'.length);
    });

    it('DELETE removes the row and the object', async () => {
      const file = (await upload(Buffer.from('to delete'), 'gone.txt').expect(201)).body;
      const res = await request(base).delete(`/api/v1/files/${file.id}`).set(bearer(t.owner.accessToken)).expect(200);
      expect(res.body).to.deep.equal({ id: file.id, deleted: true });
      expect(await stored()).not.to.include(`${t.tenantId}/${file.id}`);
      expectProblem(await request(base).delete(`/api/v1/files/${file.id}`).set(bearer(t.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    });

    it('a visitor uploads through the widget API and fetches their file', async () => {
      const visitor = await widgetSession(base, t);
      const res = await request(base).post('/api/v1/widget/files').set(asVisitor(visitor.token)).attach('file', PNG, 'screenshot.png').expect(201);
      expect(res.body.uploaded_by).to.deep.equal({ type: 'visitor', id: visitor.visitorId });
      const meta = await request(base).get(`/api/v1/widget/files/${res.body.id}`).set(asVisitor(visitor.token)).expect(200);
      const body = Buffer.from(await (await fetch(meta.body.url)).arrayBuffer());
      expect(sha256(body)).to.equal(sha256(PNG));
    });
  });
}

describe('files: who may see and attach them', function () {
  this.timeout(60_000);
  let dir: string;
  let storage: LocalStorage;
  let server: Server;
  let base: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'files-access-'));
    storage = new LocalStorage(dir);
    const h = await getHarness();
    ({ server, base } = await listen(h.appWith({}, { files: { storage, signingKey: SIGNING_KEY } })));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const upload = (token: string, content = 'hello', fields: Record<string, string> = {}) => {
    let req = request(base).post('/api/v1/files').set(bearer(token));
    for (const [name, value] of Object.entries(fields)) req = req.field(name, value);
    return req.attach('file', Buffer.from(content), 'note.txt');
  };
  const signed = (id: string, expires: number) => createHmac('sha256', SIGNING_KEY).update(`file-download\n${id}\n${expires}`).digest('base64url');

  it('refuses expired and tampered download links', async () => {
    const t = await createTenant();
    const file = (await upload(t.owner.accessToken, 'secret bytes').expect(201)).body;
    const other = (await upload(t.owner.accessToken, 'other bytes').expect(201)).body;
    const meta = await request(base).get(`/api/v1/files/${file.id}`).set(bearer(t.owner.accessToken)).expect(200);
    const url = new URL(meta.body.url);
    const expires = Number(url.searchParams.get('expires'));
    const signature = url.searchParams.get('signature')!;
    await request(base).get(`${url.pathname}${url.search}`).expect(200, 'secret bytes');

    const past = Math.floor(Date.now() / 1000) - 1;
    const expired = expectProblem(await request(base).get(`/api/v1/files/${file.id}/content`).query({ expires: past, signature: signed(file.id, past) }), 403, 'ERR_FORBIDDEN');
    expect(expired.detail).to.match(/expired/);
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    for (const query of [
      { expires, signature: flipped },
      { expires: expires + 3600, signature },
      { expires, signature: signed(file.id, expires).replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) },
    ]) {
      expectProblem(await request(base).get(`/api/v1/files/${file.id}/content`).query(query), 403, 'ERR_FORBIDDEN');
    }
    // A signature is for its file only.
    expectProblem(await request(base).get(`/api/v1/files/${other.id}/content`).query({ expires, signature }), 403, 'ERR_FORBIDDEN');
    expectProblem(await request(base).get(`/api/v1/files/${file.id}/content`).query({ expires }), 400, 'ERR_VALIDATION');
  });

  it('another tenant cannot see, download or delete a file, with any credential', async () => {
    const a = await createTenant();
    const b = await createTenant();
    const file = (await upload(a.owner.accessToken).expect(201)).body;
    const keyOf = async (t: TestTenant, scopes: string[]) =>
      (await request(base).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'k', scopes }).expect(201)).body.key as string;
    const bKey = await keyOf(b, ['files:read', 'files:write']);
    expectProblem(await request(base).get(`/api/v1/files/${file.id}`).set(bearer(b.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(base).delete(`/api/v1/files/${file.id}`).set(bearer(b.owner.accessToken)), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(base).get(`/api/v1/files/${file.id}`).set({ 'X-API-Key': bKey, 'X-Tenant-ID': b.tenantId }), 404, 'ERR_NOT_FOUND');
    // b's owner naming a's tenant is refused before anything is looked up.
    expectProblem(await request(base).get(`/api/v1/files/${file.id}`).set({ ...bearer(b.owner.accessToken), 'X-Tenant-ID': a.tenantId }), 403, 'ERR_FORBIDDEN');
    // a's own members and keys do see it; a lite seat reads.
    const aKey = await keyOf(a, ['files:read']);
    await request(base).get(`/api/v1/files/${file.id}`).set({ 'X-API-Key': aKey, 'X-Tenant-ID': a.tenantId }).expect(200);
    const lite = await addMember(a, { seat: 'lite' });
    await request(base).get(`/api/v1/files/${file.id}`).set(bearer(await login(lite.email))).expect(200);
    expectProblem(await upload(await login(lite.email)), 403, 'ERR_LITE_SEAT');
    // Uploading for another tenant's conversation is 404, and keeps nothing.
    const bConv = await createConversation(b);
    const before = await storage.list();
    expectProblem(await upload(a.owner.accessToken, 'x', { conversation_id: bConv.id }), 404, 'ERR_NOT_FOUND');
    expect(await storage.list()).to.deep.equal(before);
  });

  it('attachments: same tenant, unattached or in the same conversation; shown as objects in answers and events', async () => {
    const t = await createTenant();
    const other = await createTenant();
    const conv = await createConversation(t);
    const conv2 = await createConversation(t);
    const token = t.owner.accessToken;
    const send = (conversationId: string, attachments: string[]) =>
      request(base).post('/api/v1/messages').set(bearer(token)).send({ conversation_id: conversationId, content: 'files', attachments });

    const free = (await upload(token, 'free').expect(201)).body;
    const forConv = (await upload(token, 'for conv', { conversation_id: conv.id }).expect(201)).body;
    expect(forConv.conversation_id).to.equal(conv.id);
    const foreign = (await upload(other.owner.accessToken, 'foreign').expect(201)).body;

    const sent = await send(conv.id, [forConv.id, free.id]).expect(201);
    const shape = (f: Record<string, any>) => ({ id: f.id, name: f.name, content_type: f.content_type, size: f.size });
    expect(sent.body.attachments).to.deep.equal([shape(forConv), shape(free)]);
    // Again in the same conversation is fine; in another it is 422; unknown or foreign ids are 404.
    await send(conv.id, [free.id]).expect(201);
    expectProblem(await send(conv2.id, [free.id]), 422, 'ERR_INVALID_ATTACHMENT');
    expectProblem(await send(conv2.id, [newId('file')]), 404, 'ERR_NOT_FOUND');
    expectProblem(await send(conv2.id, [foreign.id]), 404, 'ERR_NOT_FOUND');
    expectProblem(await send(conv.id, ['not-a-file']), 400, 'ERR_VALIDATION');

    const listed = await request(base).get(`/api/v1/messages/${conv.id}`).set(bearer(token)).expect(200);
    expect(listed.body.data.find((m: { id: string }) => m.id === sent.body.id).attachments).to.deep.equal([shape(forConv), shape(free)]);
    const events = await eventsOf(t, conv.id);
    const created = events.find((e) => e.type === 'message.created' && (e.data as any).message.id === sent.body.id);
    expect((created!.data as any).message.attachments).to.deep.equal([shape(forConv), shape(free)]);

    // A deleted file no longer shows.
    await request(base).delete(`/api/v1/files/${free.id}`).set(bearer(token)).expect(200);
    const after = await request(base).get(`/api/v1/messages/${conv.id}`).set(bearer(token)).expect(200);
    expect(after.body.data.find((m: { id: string }) => m.id === sent.body.id).attachments).to.deep.equal([shape(forConv)]);
  });

  it('visitors see their own uploads and their conversations\' public attachments, nothing else', async () => {
    const t = await createTenant();
    const owner = t.owner.accessToken;
    const one = await widgetSession(base, t);
    const two = await visitorOf(base, one.widgetId);
    const widgetUpload = (v: { token: string }, content: string, fields: Record<string, string> = {}) => {
      let req = request(base).post('/api/v1/widget/files').set(asVisitor(v.token));
      for (const [name, value] of Object.entries(fields)) req = req.field(name, value);
      return req.attach('file', Buffer.from(content), 'mine.txt');
    };
    const getAs = (v: { token: string }, id: string) => request(base).get(`/api/v1/widget/files/${id}`).set(asVisitor(v.token));

    const mine = (await widgetUpload(one, 'from visitor one').expect(201)).body;
    await getAs(one, mine.id).expect(200);
    expectProblem(await getAs(two, mine.id), 404, 'ERR_NOT_FOUND');

    // Visitor one starts a conversation with the file; visitor two cannot attach it, nor visitor one a member's file.
    const conv = (await request(base).post('/api/v1/widget/conversations').set(asVisitor(one.token)).send({ content: 'see file', attachments: [mine.id] }).expect(201)).body;
    const theirs = (await widgetUpload(two, 'from visitor two').expect(201)).body;
    const memberFile = (await upload(owner, 'from the team').expect(201)).body;
    expectProblem(await request(base).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(one.token)).send({ content: 'x', attachments: [theirs.id] }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(base).post(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(one.token)).send({ content: 'x', attachments: [memberFile.id] }), 404, 'ERR_NOT_FOUND');
    expectProblem(await widgetUpload(two, 'x', { conversation_id: conv.id }), 404, 'ERR_NOT_FOUND');

    // The team answers with a file, and writes an internal note with another.
    const internalFile = (await upload(owner, 'internal only').expect(201)).body;
    await request(base).post('/api/v1/messages').set(bearer(owner)).send({ conversation_id: conv.id, content: 'here', attachments: [memberFile.id] }).expect(201);
    await request(base).post('/api/v1/messages').set(bearer(owner)).send({ conversation_id: conv.id, content: 'note', internal: true, attachments: [internalFile.id] }).expect(201);
    const seen = await getAs(one, memberFile.id).expect(200);
    expect(seen.body.uploaded_by).to.deep.equal({ type: 'user', id: null });
    expect(Buffer.from(await (await fetch(seen.body.url)).arrayBuffer()).toString()).to.equal('from the team');
    expectProblem(await getAs(one, internalFile.id), 404, 'ERR_NOT_FOUND');
    expectProblem(await getAs(two, memberFile.id), 404, 'ERR_NOT_FOUND');

    const messages = await request(base).get(`/api/v1/widget/conversations/${conv.id}/messages`).set(asVisitor(one.token)).expect(200);
    const attachmentIds = messages.body.data.flatMap((m: { attachments: { id: string }[] }) => m.attachments.map((a) => a.id));
    expect(attachmentIds).to.have.members([memberFile.id, mine.id]);
    // The member sees the visitor's upload as the visitor's.
    const asMember = await request(base).get(`/api/v1/files/${mine.id}`).set(bearer(owner)).expect(200);
    expect(asMember.body).to.include({ conversation_id: conv.id });
    expect(asMember.body.uploaded_by).to.deep.equal({ type: 'visitor', id: one.visitorId });
  });

  it('visitors have their own upload budget', async () => {
    const t = await createTenant();
    const h = await getHarness();
    const limited = await listen(h.appWith({}, { files: { storage, signingKey: SIGNING_KEY }, config: { ...TEST_CONFIG, rateLimits: { ...TEST_CONFIG.rateLimits, widgetUploads: 1 } } }));
    try {
      const v = await widgetSession(limited.base, t);
      const send = () => request(limited.base).post('/api/v1/widget/files').set(asVisitor(v.token)).attach('file', Buffer.from('x'), 'x.txt');
      await send().expect(201);
      const refused = expectProblem(await send(), 429, 'ERR_RATE_LIMITED');
      expect(refused.detail).to.match(/retry/);
    } finally {
      limited.server.closeAllConnections();
      await new Promise((resolve) => limited.server.close(resolve));
    }
  });
});

// The S3 backend sends a spooled upload through two buffers it reuses (src/files/storage.ts sendFile):
// here against a plain HTTP server standing in for the store, which sees the bytes exactly or drops them.
describe('files: the S3 backend sending a spooled upload', function () {
  const storeAnswering = async (
    onRequest: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void,
    rewire?: (server: import('node:http').Server) => void,
  ) => {
    const { createServer } = await import('node:http');
    // Half-open: a store may end its side and go on reading.
    const server = createServer({ allowHalfOpen: true } as never, onRequest);
    rewire?.(server);
    // Connections a rewired store handles itself are not the HTTP server's to close.
    const sockets = new Set<import('node:net').Socket>();
    server.on('connection', (socket: import('node:net').Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = await mkdtemp(join(tmpdir(), 'files-test-send-'));
    const storage = new S3Storage({
      bucket: 'chat-files',
      endPoint: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      useSSL: false,
      region: 'us-east-1',
      accessKey: 'KEY',
      secretKey: 'SECRET',
      pathStyle: true,
      spoolDir: join(dir, 'spool'),
    });
    return {
      storage,
      spoolDir: join(dir, 'spool'),
      spooled: () => readdir(join(dir, 'spool')),
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
        await rm(dir, { recursive: true, force: true });
      },
    };
  };
  const key = () => `${newId('tenant')}/${newId('file')}`;
  /** A store that answers 403 to a request's first bytes, as raw HTTP, and then does what `then` does with its socket. */
  const refusingStore = (headers: string, then: (socket: import('node:net').Socket, answer: string) => void) =>
    storeAnswering(() => undefined, (server) => {
      server.removeAllListeners('connection');
      server.on('connection', (socket: import('node:net').Socket) => {
        socket.once('data', () => {
          const body = '<Error><Code>AccessDenied</Code></Error>';
          then(socket, `HTTP/1.1 403 Forbidden\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`);
        });
        socket.on('error', () => undefined);
      });
    });
  /** This process's open descriptors of files under dir (a removed file's link ends in " (deleted)"). */
  const openFilesUnder = async (dir: string) => {
    const links = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
    return links.filter((link) => link.startsWith(`${dir}/`));
  };

  it('the store gets every byte in order, a last read shorter than the buffer included', async () => {
    let received: Buffer | undefined;
    const store = await storeAnswering((req, res) => {
      const chunks: Buffer[] = [];
      // Read slowly: the sender's writes wait on a full socket, so a buffer read into too early would show.
      req.on('data', (c: Buffer) => {
        chunks.push(c);
        req.pause();
        setImmediate(() => req.resume());
      });
      req.on('end', () => {
        received = Buffer.concat(chunks);
        res.end();
      });
    });
    try {
      // Distinct bytes at every offset: a buffer read into before its write was taken would show.
      const content = Buffer.alloc(3 * 256 * 1024 + 123);
      for (let i = 0; i + 4 <= content.length; i += 4) content.writeUInt32BE(i, i);
      await store.storage.put(key(), Readable.from([content.subarray(0, 70_000), content.subarray(70_000)]));
      expect(received?.length).to.equal(content.length);
      expect(received!.equals(content)).to.equal(true);
      expect(await store.spooled()).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it('a store that drops the connection mid-body fails the put, with nothing left in the spool', async () => {
    const store = await storeAnswering((req) => {
      let seen = 0;
      req.on('data', (c: Buffer) => {
        seen += c.length;
        if (seen > 1024 * 1024) req.socket.destroy();
      });
    });
    try {
      const error = await store.storage.put(key(), Readable.from(bytes(8 * 1024 * 1024))).then(() => undefined, (err: Error) => err);
      expect(error, 'the put succeeded').to.be.instanceOf(Error);
      expect(await store.spooled()).to.deep.equal([]);
      expect(await openFilesUnder(store.spoolDir), 'the spool file closed').to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it('a store that refuses and stops reading, keeping the connection, fails the put at its answer', async () => {
    const store = await refusingStore('', (socket, answer) => {
      socket.write(answer);
      // Reads nothing more: the sender's writes fill the connection and wait.
      socket.pause();
    });
    try {
      const error = await store.storage.put(key(), Readable.from(bytes(32 * 1024 * 1024))).then(() => undefined, (err: Error) => err);
      expect(error?.message).to.contain('answered 403');
      expect(await store.spooled()).to.deep.equal([]);
      expect(await openFilesUnder(store.spoolDir)).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it('a store that refuses before reading the body, closing the connection, fails the put with its answer and the spool file closed', async () => {
    // As a Go server (MinIO) answers with much of the body unread: Connection: close, then its side of
    // the connection ended while it goes on reading (the sender's writes are called back with an error).
    const store = await refusingStore('Connection: close\r\n', (socket, answer) => socket.end(answer));
    try {
      const error = await store.storage.put(key(), Readable.from(bytes(8 * 1024 * 1024))).then(() => undefined, (err: Error) => err);
      expect(error, 'the put succeeded').to.be.instanceOf(Error);
      expect(await store.spooled()).to.deep.equal([]);
      // Nothing still holds the removed spool file open (the put ends after its sender has).
      expect(await openFilesUnder(store.spoolDir)).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });
});
