import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { parse } from 'yaml';
import { type Handlers, loadContract, mountOperations } from '../../src/http/contract.ts';
import { getHarness } from '../support/harness.ts';
import { bothMetadataMiddlewares, bothMetadataMiddlewaresFor, segmentCount, validatorRoutes } from '../../src/http/route-lookup.ts';
import { validatorMiddlewares } from '../../src/http/validator-compile.ts';

type MetadataMiddleware = (req: never, res: never, next: (err?: unknown) => void) => void;

/** Runs each method and URL through both route lookups and expects the same outcome of each. */
function compareLookups(both: { original: MetadataMiddleware; indexed: MetadataMiddleware }, paths: Iterable<string>) {
  const outcome = (mw: MetadataMiddleware, url: string, method: string) => {
    const req = { method, url, originalUrl: url, baseUrl: '', path: url.split('?')[0], params: {}, app: { enabled: () => false } } as Record<string, unknown>;
    try {
      let nextCalled = false;
      mw(req as never, {} as never, (err?: unknown) => {
        nextCalled = err === undefined;
      });
      return { nextCalled, openapi: req.openapi, params: req.params };
    } catch (err) {
      const e = err as { status?: number; message?: string; headers?: unknown; name?: string };
      return { thrown: { name: e.name, status: e.status, message: e.message, headers: e.headers } };
    }
  };
  let compared = 0;
  let matched = 0;
  for (const url of paths) {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']) {
      const expected = outcome(both.original, url, method);
      const actual = outcome(both.indexed, url, method);
      expect(actual, `${method} ${url}`).to.deep.equal(expected);
      compared++;
      if ('openapi' in expected && expected.openapi) matched++;
    }
  }
  return { compared, matched };
}

describe('the contract', () => {
  it('is served as JSON and YAML, as openapi/chat.yaml with the service itself as the first server', async () => {
    const { app } = await getHarness();
    const contract = loadContract();
    const document = { ...contract.document, servers: [{ url: '/api', description: 'This service' }, ...contract.document.servers] };
    const json = await request(app).get('/api/openapi.json').expect(200).expect('Content-Type', /application\/json/);
    expect(json.body).to.deep.equal(document);
    const yaml = await request(app).get('/api/openapi.yaml').expect(200).expect('Content-Type', /application\/yaml/);
    expect(parse(yaml.text)).to.deep.equal(document);
  });

  it('is rendered at /api/docs with its assets served locally', async () => {
    const { app } = await getHarness();
    const page = await request(app).get('/api/docs').expect(200).expect('Content-Type', /text\/html/);
    // Redoc's bundle (preloaded, then imported by the page's module) and the document it hydrates from.
    const assets = [...page.text.matchAll(/(?:href="|from "|hydrate\(")(\/api\/docs\/(?:assets|reference)\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).to.include('/api/docs/reference/openapi.json');
    expect(assets.some((a) => a.startsWith('/api/docs/assets/redoc-'))).to.equal(true);
    for (const src of assets) await request(app).get(src).expect(200);
  });

  it('every operation has an operationId, and each is routed to a handler', async () => {
    const { operations } = loadContract();
    expect(operations.length).to.be.greaterThan(0);
    for (const op of operations) expect(op.operationId, `${op.method} ${op.path}`).to.be.a('string').and.match(/^[a-z][A-Za-z]+$/);
    const ids = operations.map((o) => o.operationId);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('refuses to start with a handler missing or a handler for an operation the contract lacks', () => {
    const contract = loadContract();
    const noop = async () => ({ status: 200, body: {} });
    const all = Object.fromEntries(contract.operations.map((o) => [o.operationId, noop])) as unknown as Handlers;
    expect(() => mountOperations(express.Router(), contract, all)).not.to.throw();
    const { getHealth: _dropped, ...missing } = all;
    expect(() => mountOperations(express.Router(), contract, missing as Handlers)).to.throw(/no handler for operation getHealth/);
    const stray = { ...all, getWeather: noop } as unknown as Handlers;
    expect(() => mountOperations(express.Router(), contract, stray)).to.throw(/getWeather/);
  });
});

describe('the AsyncAPI contract', () => {
  it('describes exactly the event types of the REST contract, each with the shared payload schema', async () => {
    const { readFileSync } = await import('node:fs');
    const asyncapi = parse(readFileSync(new URL('../../openapi/events.asyncapi.yaml', import.meta.url), 'utf8'));
    const { document } = loadContract();
    const sent = asyncapi.operations.sendEvents.messages.map((m: { $ref: string }) => m.$ref.split('/').pop());
    const messages = sent.map((key: string) => asyncapi.components.messages[key]);
    expect(messages.map((m: { name: string }) => m.name).sort()).to.deep.equal([...document.components.schemas.EventType.enum].sort());
    const schemas = document.components.schemas;
    const variantOf = (ref: string) => schemas[ref.split('/').pop()!];
    for (const m of messages) {
      // Each message is one variant of the REST contract's discriminated SocketEvent, with its type as a const.
      const ref: string = m.payload.$ref;
      expect(ref.startsWith('./chat.yaml#/components/schemas/'), ref).to.equal(true);
      expect(variantOf(ref).properties.type.const).to.equal(m.name);
      expect(schemas.SocketEvent.discriminator.mapping[m.name]).to.equal(ref.replace('./chat.yaml', ''));
    }
    expect(asyncapi.components.schemas.EventFrame.$ref).to.equal('./chat.yaml#/components/schemas/SocketEvent');
  });

  it('Event and SocketEvent are discriminated by type: one variant per event type, stored ones with an id, live ones without', () => {
    const { document } = loadContract();
    const schemas = document.components.schemas;
    const live = ['presence.updated', 'typing', 'visitor.online', 'visitor.offline'];
    for (const union of ['Event', 'SocketEvent']) {
      const { oneOf, discriminator } = schemas[union];
      expect(discriminator.propertyName).to.equal('type');
      expect(oneOf.map((v: { $ref: string }) => v.$ref)).to.deep.equal(Object.values(discriminator.mapping));
      for (const [type, ref] of Object.entries<string>(discriminator.mapping)) {
        const variant = schemas[ref.split('/').pop()!];
        expect(variant.properties.type.const, ref).to.equal(type);
        expect(variant.required.includes('id'), ref).to.equal(!live.includes(type));
      }
    }
    expect(Object.keys(schemas.SocketEvent.discriminator.mapping).sort()).to.deep.equal([...schemas.EventType.enum].sort());
    expect(Object.keys(schemas.Event.discriminator.mapping).sort()).to.deep.equal(schemas.EventType.enum.filter((t: string) => !live.includes(t)).sort());
  });
});

describe('route matching', () => {
  it('no $ref of the contract points into its paths (the validators are compiled without them)', () => {
    const refs = JSON.stringify(loadContract().document).match(/"\$ref":"[^"]*"/g) ?? [];
    expect(refs.length).to.be.above(100);
    expect(refs.filter((ref) => !ref.startsWith('"$ref":"#/components/'))).to.deep.equal([]);
  });

  it("a route's validators are compiled without the contract's paths, which stay in the document", async () => {
    await getHarness();
    const responses = { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } };
    const doc = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: { '/things': { get: { responses } } }, components: { schemas: { Thing: { type: 'object' } } } };
    const { ResponseValidator } = validatorMiddlewares();
    const validator = new ResponseValidator(doc, { strict: false, validateSchema: false, useDefaults: false, formats: {}, serDesMap: {}, validateFormats: true }, {}, 0) as {
      ajvBody: { addSchema: (schema: { paths: unknown }, key: string) => unknown };
      buildValidators: (responses: unknown, key: string) => Record<string, Record<string, (body: unknown) => boolean>>;
      spec: typeof doc;
    };
    const compiled: unknown[] = [];
    const addSchema = validator.ajvBody.addSchema.bind(validator.ajvBody);
    validator.ajvBody.addSchema = (schema, key) => {
      compiled.push(schema.paths);
      return addSchema(schema, key);
    };
    const validators = validator.buildValidators(responses, 'GET-/things');
    expect(compiled).to.deep.equal([{}]);
    expect(validators['200']!['application/json']!({ response: {} })).to.equal(true);
    expect(validator.spec.paths).to.have.key('/things');
  });

  it("looks each request's operation up among the paths of its length, and finds what the validator's own scan finds", async () => {
    const { app } = await getHarness();
    // The validator builds its lookup at the first request.
    await request(app).get('/api/v1/conversations').expect(401);
    const both = bothMetadataMiddlewares();
    expect(both, 'the patched lookup was built').to.not.equal(undefined);
    const routes = validatorRoutes();
    expect(routes.length).to.be.greaterThan(50);

    const paths = new Set<string>(['/api', '/api/', '/api/v1', '/api/v1/nope', '/api/v2/conversations', '/api/v1//conversations', '/api/health', '/api/v1/conversations//', '/api/v1/conversations/a/b/c/d/e/f']);
    for (const route of routes) {
      for (const value of ['x_1', 'a%20b', 'a%2Fb', '%E0%A4%A', 'search', '']) {
        const path = route.replace(/:[A-Za-z_]+/g, value);
        paths.add(path);
        paths.add(`${path}/`);
        paths.add(`${path}?limit=1`);
        paths.add(path.toUpperCase());
      }
    }
    const { compared, matched } = compareLookups(both!, paths);
    // The comparison covered operations found, 404s, 405s and malformed escapes, not only misses.
    expect(matched).to.be.greaterThan(routes.length);
    expect(compared).to.be.greaterThan(routes.length * 50);
  });

  it('finds what the scan finds for routes the contract does not have yet: one ending in a slash, the base path itself, one path-to-regexp refuses', () => {
    const both = bothMetadataMiddlewaresFor('/api', { '/': ['get'], '/things/': ['get'], '/things/{id}': ['get', 'delete'], '/things/{id}/parts/': ['post'], '/{1st}': ['get'] });
    const paths = ['/api', '/api/', '/api//', '/api/things', '/api/things/', '/api/things//', '/api/things/t1', '/api/things/t1/', '/api/things/t1/parts/', '/api/things/t1/parts//', '/api/nope', '/api/a/b/c/d'];
    const { matched } = compareLookups(both as never, paths);
    expect(matched).to.be.greaterThan(5);
  });

  it('counts the segments of a path as a route of the contract has them, one trailing slash aside', () => {
    expect(segmentCount('/api/v1/conversations')).to.equal(3);
    expect(segmentCount('/api/v1/conversations/')).to.equal(3);
    expect(segmentCount('/api/v1/conversations/:id')).to.equal(4);
    expect(segmentCount('/api/v1//conversations')).to.equal(4);
    expect(segmentCount('/')).to.equal(1);
  });
});
