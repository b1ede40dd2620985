import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'chai';
import type { Express } from 'express';
import request from 'supertest';
import { loadContract } from '../../src/http/contract.ts';
import { createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { startMock } from '../support/mock.ts';

// The mock says what the service says (issues 41 and 46): for every operation, the same bad request —
// no credentials, a malformed body, an unknown id — gets the same status and code from `npm run mock` as
// from the service. A frontend built against the mock then handles the errors the service sends.

const SITE = 'https://shop.example';
const UUID = '01935d6e-7a3c-7c2e-9f10-2b6d0c1e4aff';

interface Answer {
  status: number;
  code: string | undefined;
}

describe('the mock and the service answer bad requests alike', function () {
  this.timeout(120_000);
  let mock: ChildProcess;
  let base: string;
  let app: Express;
  const { document, basePath } = loadContract();
  /** Credentials the service accepts, by security scheme; the mock accepts any of the same shape. */
  let owner: Record<string, string>;
  let visitor: Record<string, string>;

  before(async () => {
    ({ base, process: mock } = await startMock());
    ({ app } = await getHarness());
    const t = await createTenant();
    owner = { Authorization: `Bearer ${t.owner.accessToken}` };
    const widget = (await request(app).post('/api/v1/widgets').set(owner).send({ name: 'Shop' }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(owner).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    const session = await request(app).post('/api/v1/widget/sessions').set('Origin', SITE).send({ widget_id: widget.id, page_url: `${SITE}/` }).expect(201);
    visitor = { Authorization: `Bearer ${session.body.visitor_token}`, Origin: SITE };
  });

  after(async () => {
    if (mock.exitCode === null) {
      mock.kill('SIGTERM');
      await once(mock, 'exit');
    }
  });

  const resolve = (node: any): any => {
    for (let hops = 0; node?.$ref && hops < 10; hops++) node = node.$ref.replace(/^#\//, '').split('/').reduce((at: any, k: string) => at?.[k], document);
    return node;
  };

  interface Op {
    method: string;
    path: string;
    operationId: string;
    /** The path with an id of the right shape that names nothing. */
    unknownPath: string;
    hasPathId: boolean;
    /** Whether it takes the shared `limit` query parameter (lists). */
    hasLimit: boolean;
    schemes: string[];
    json: unknown;
    jsonBody: boolean;
    responses: Record<string, unknown>;
  }
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve).filter((p: any) => p.in === 'path');
      let unknownPath = path;
      for (const p of params) {
        const prefix = /^\^([a-z]+_)/.exec(resolve(p.schema).pattern ?? '')?.[1] ?? '';
        unknownPath = unknownPath.replace(`{${p.name}}`, `${prefix}${UUID}`);
      }
      const body = resolve(op.requestBody);
      const media = body?.content?.['application/json'];
      const json = media ? ('example' in media ? media.example : resolve(Object.values<any>(media.examples ?? {})[0])?.value) : undefined;
      const security = op.security ?? document.security ?? [];
      ops.push({
        method,
        path,
        operationId: op.operationId,
        unknownPath,
        hasPathId: params.length > 0,
        hasLimit: [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve).some((p: any) => p.in === 'query' && p.name === 'limit'),
        schemes: [...new Set<string>(security.flatMap((s: object) => Object.keys(s)))],
        json,
        jsonBody: media !== undefined,
        responses: op.responses,
      });
    }
  }

  /** The credential the service accepts for the operation: an owner's token, or the visitor's. */
  const credentialOf = (op: Op): Record<string, string> => (op.schemes.includes('bearerAuth') ? owner : op.schemes.includes('visitorAuth') ? visitor : {});

  async function askMock(op: Op, path: string, headers: Record<string, string>, body: unknown): Promise<Answer> {
    const res = await fetch(`${base}${basePath}${path}`, {
      method: op.method.toUpperCase(),
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { code?: string }).code;
    } catch {
      code = undefined;
    }
    return { status: res.status, code };
  }

  async function askService(op: Op, path: string, headers: Record<string, string>, body: unknown): Promise<Answer> {
    let req = (request(app) as any)[op.method](`${basePath}${path}`).set(headers);
    if (body !== undefined) req = req.set('content-type', 'application/json').send(JSON.stringify(body));
    const res = await req;
    return { status: res.status, code: res.body?.code };
  }

  const show = (a: Answer) => `${a.status} ${a.code ?? '(no code)'}`;

  async function compare(label: string, selected: Op[], ask: (op: Op) => { path: string; mock: Record<string, string>; service: Record<string, string>; body: unknown }) {
    const disagreements: string[] = [];
    for (const op of selected) {
      const { path, mock: mockHeaders, service: serviceHeaders, body } = ask(op);
      const [mocked, served] = [await askMock(op, path, mockHeaders, body), await askService(op, path, serviceHeaders, body)];
      if (mocked.status !== served.status || mocked.code !== served.code) {
        disagreements.push(`${op.method.toUpperCase()} ${op.path} (${op.operationId}) ${label}: mock ${show(mocked)}, service ${show(served)}`);
      }
    }
    expect(selected.length, `operations tried for ${label}`).to.be.greaterThan(5);
    if (process.env.SHOW_DISAGREEMENTS) console.log(disagreements.join('\n'));
    expect(disagreements.join('\n'), `${disagreements.length} disagreements`).to.equal('');
  }

  it('without credentials: every operation that needs some', async () => {
    await compare(
      'without credentials',
      ops.filter((op) => op.schemes.length > 0),
      (op) => {
        // A visitor's request comes from the site: only its token is missing.
        const site: Record<string, string> = op.schemes.includes('visitorAuth') ? { Origin: SITE } : {};
        return { path: op.unknownPath, mock: site, service: site, body: op.json };
      },
    );
  });

  it('with a malformed body: every operation that takes JSON', async () => {
    await compare(
      'with a malformed body',
      ops.filter((op) => op.jsonBody),
      (op) => ({ path: op.unknownPath, mock: credentialOf(op), service: credentialOf(op), body: ['not', 'the', 'object', 'asked for'] }),
    );
  });

  it('with a malformed query: every list', async () => {
    await compare(
      'with a malformed query',
      ops.filter((op) => op.hasLimit),
      (op) => ({ path: `${op.unknownPath}?limit=-1`, mock: credentialOf(op), service: credentialOf(op), body: op.json }),
    );
  });

  it("a client still gets an operation's 422 from the mock by asking for it", async () => {
    const send = async (prefer: string | undefined, body: unknown) => {
      const res = await fetch(`${base}/api/v1/messages`, {
        method: 'POST',
        headers: { authorization: 'Bearer token', 'content-type': 'application/json', ...(prefer ? { prefer } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, code: ((await res.json()) as { code?: string }).code };
    };
    const valid = { conversation_id: `conv_${UUID}`, content: 'Hello' };
    expect(await send('code=422', valid)).to.deep.equal({ status: 422, code: 'ERR_INVALID_ATTACHMENT' });
    expect(await send('code=422', [])).to.deep.equal({ status: 422, code: 'ERR_INVALID_ATTACHMENT' });
    // A bad body is a 400, as from the service, whether the client asks for one or not.
    expect(await send('code=400', [])).to.deep.equal({ status: 400, code: 'ERR_VALIDATION' });
    expect(await send(undefined, [])).to.deep.equal({ status: 400, code: 'ERR_VALIDATION' });
  });

  it('a 400 from the mock names what is wrong with this request, where the service does', async () => {
    const pathsOf = (problem: { errors: { path: string }[] }) => problem.errors.map((e) => e.path);
    const mockPaths = async (res: Response) => pathsOf((await res.json()) as { errors: { path: string }[] });
    const servicePaths = (res: request.Response) => pathsOf(res.body as { errors: { path: string }[] });
    const body = { conversation_id: 'conv_nope', content: 'Hello' };
    const mocked = await fetch(`${base}/api/v1/messages`, { method: 'POST', headers: { authorization: 'Bearer token', 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const served = await request(app).post('/api/v1/messages').set(owner).send(body);
    expect([mocked.status, served.status]).to.deep.equal([400, 400]);
    expect(await mockPaths(mocked)).to.deep.equal(['/body/conversation_id']);
    expect(servicePaths(served)).to.deep.equal(['/body/conversation_id']);
    // A list's query too (Prism answers these with its own 400, whose example is about another request).
    const list = await fetch(`${base}/api/v1/conversations?limit=0`, { headers: { authorization: 'Bearer token' } });
    expect(await mockPaths(list)).to.deep.equal(['/query/limit']);
    expect(servicePaths(await request(app).get('/api/v1/conversations?limit=0').set(owner))).to.deep.equal(['/query/limit']);
  });

  it('with an unknown id: every operation on one resource (the mock told to answer its error, as a client would ask it)', async () => {
    await compare(
      'with an unknown id',
      ops.filter((op) => op.hasPathId),
      (op) => ({ path: op.unknownPath, mock: { ...credentialOf(op), Prefer: 'code=404' }, service: credentialOf(op), body: op.json }),
    );
  });
});
