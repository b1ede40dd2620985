import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { v4 as uuidv4 } from 'uuid';
import { loadContract } from '../../src/http/contract.ts';
import { newId, newUuid } from '../../src/shared/ids.ts';
import { addMember, createConversation, createTenant, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { declaresStatus } from '../support/hooks.ts';
import { recordFigure } from './figures.ts';

// A schema-driven fuzz over every operation of the contract: well-formed requests with one part broken
// (NUL, lone surrogates, huge and non-finite numbers, negative zero, floats for integers, arrays and
// objects for scalars, deep nesting, missing and extra properties, wrong content types, invalid JSON,
// broken and unknown ids), all authenticated so that they get past access and reach validation and
// the handlers. Whatever comes back must be a 4xx problem or a success, with a status the operation
// declares: never a 5xx, never a hang, never an answer a client generated from the contract has no type for.
// Deterministic: FUZZ_SEED picks the run (the failure message names it), FUZZ_REQUESTS its size.

const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_500);
const CONCURRENCY = 4;
const REQUEST_TIMEOUT_MS = 15_000;
const ORIGIN = 'https://fuzz-shop.example';

const contract = loadContract();
const doc = contract.document;

// ---- a small seeded PRNG (mulberry32) ------------------------------------------------------------------

function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}
type Rng = ReturnType<typeof prng>;

// ---- JSON with raw pieces (1e309, -0, 2^63, 10,000 levels) that JSON.stringify cannot write -------------

class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
const MISSING = Symbol('missing');

function serialise(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialise).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== MISSING)
      .map(([k, v]) => `${JSON.stringify(k)}:${serialise(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// ---- schemas --------------------------------------------------------------------------------------------

type Schema = Record<string, any>;

function deref<T extends Schema | undefined>(node: T): T {
  let at: any = node;
  for (let hops = 0; at?.$ref && hops < 20; hops++) {
    at = (at.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((n: any, k: string) => n?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  }
  return at;
}

const typesOf = (schema: Schema): string[] => {
  if (schema.type) return [schema.type].flat();
  if (schema.properties || schema.required) return ['object'];
  if (schema.items) return ['array'];
  if (schema.enum) return [...new Set(schema.enum.map((v: unknown) => (v === null ? 'null' : typeof v)))] as string[];
  if (schema.const !== undefined) return [typeof schema.const];
  return [];
};

interface Fixture {
  tenant: TestTenant;
  visitorToken: string;
  /** Ids that exist, by prefix ('' for bare UUIDs: departments). */
  ids: Record<string, string[]>;
}

const ID_PATTERN = /\^\(?([a-z]+)_\)?(\?)?\[0-9a-f\]\{8\}/;

// A value the schema accepts (as far as a generator can tell): the starting point each request breaks.
function validValue(schema: Schema | undefined, rng: Rng, fx: Fixture, depth = 0): unknown {
  schema = deref(schema);
  if (!schema || depth > 6) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return rng.pick(schema.enum);
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (schema[key]) {
      const options = (schema[key] as Schema[]).filter((s) => deref(s)?.type !== 'null');
      return validValue(rng.pick(options.length > 0 ? options : schema[key]), rng, fx, depth + 1);
    }
  }
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s: Schema) => validValue(s, rng, fx, depth + 1)));
  const type = typesOf(schema).find((t) => t !== 'null') ?? 'string';
  switch (type) {
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? 0;
      const max = schema.maximum ?? min + 100;
      // A bound itself, now and then: the values a handler's arithmetic meets last.
      if (rng.chance(0.2)) return rng.pick([min, schema.maximum ?? 2 ** 31 - 1]);
      return min + rng.int(Math.max(1, Math.min(max - min + 1, 1000)));
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'array': {
      const n = schema.maxItems !== undefined && schema.maxItems <= 100 && rng.chance(0.1) ? schema.maxItems : (schema.minItems ?? 0) + rng.int(2);
      return Array.from({ length: n }, () => validValue(schema.items, rng, fx, depth + 1));
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const required: string[] = schema.required ?? [];
      for (const [name, prop] of Object.entries<Schema>(schema.properties ?? {})) {
        if (required.includes(name) || rng.chance(0.5)) out[name] = validValue(prop, rng, fx, depth + 1);
      }
      return out;
    }
    default:
      return validString(schema, rng, fx);
  }
}

function validString(schema: Schema, rng: Rng, fx: Fixture): string {
  const pattern: string | undefined = schema.pattern;
  if (schema.format === 'email') return `fuzz-${randomUUID()}@example.test`;
  if (schema.format === 'date-time') return rng.chance(0.2) ? rng.pick(EDGE_DATES) : new Date(Date.now() - rng.int(1e9)).toISOString();
  if (schema.format === 'uri') return `https://fuzz-shop.example/${rng.int(1000)}`;
  if (pattern) {
    const prefixed = ID_PATTERN.exec(pattern);
    if (prefixed) return idFor(prefixed[1]!, rng, fx, prefixed[2] === '?');
    if (pattern.startsWith('^[0-9a-f]{8}-')) return idFor('', rng, fx, false);
    if (pattern.includes('#[0-9a-fA-F]{6}')) return '#1a2b3c';
    if (pattern.includes('[0-9a-f]{64}')) return 'ab'.repeat(32);
    if (pattern.startsWith('^(me|none')) return rng.pick(['me', 'none']);
    if (pattern.includes('[a-z0-9_-]')) return `s${rng.int(1e6)}`;
  }
  if (schema.format === 'uuid') return idFor('', rng, fx, false);
  const min = schema.minLength ?? 1;
  const max = schema.maxLength ?? 40;
  // At a bound, now and then, in characters of two and four bytes and with right-to-left marks: lengths
  // are counted in characters, columns and indexes in bytes.
  if (schema.maxLength !== undefined && schema.maxLength <= 100_000 && rng.chance(0.2)) return rng.pick(['é', '😀', '\u202e', 'a']).repeat(rng.pick([min, max]));
  const length = Math.min(max, Math.max(min, 3 + rng.int(12)));
  return `fz${rng.int(1e9)}`.padEnd(length, 'x').slice(0, Math.max(length, min));
}

/** Instants the contract's date-time accepts, at the ends of the calendar and of the day's offsets. */
const EDGE_DATES = ['0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00+14:00', '2024-02-29T12:00:00-12:00', '2026-11-22T10:00:00.123456789Z'];

/** Half the time an id that exists (when the fixture has one), else a well-formed one naming nothing. */
function idFor(prefix: string, rng: Rng, fx: Fixture, prefixOptional: boolean): string {
  const known = fx.ids[prefix];
  if (known && rng.chance(0.5)) return rng.pick(known);
  const uuid = rng.chance(0.8) ? newUuid() : uuidv4();
  if (prefix === '') return uuid;
  return prefixOptional && rng.chance(0.3) ? uuid : `${prefix}_${uuid}`;
}

// ---- what breaks a value --------------------------------------------------------------------------------

const DEEP_ARRAY = new Raw('['.repeat(10_000) + ']'.repeat(10_000));
const DEEP_OBJECT = new Raw('{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000));

const BAD_STRINGS: unknown[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\ud83d\ude00 émoji ✓ 中文 ‮rtl',
  'x'.repeat(10_001),
  'y'.repeat(100_000),
  "'; drop table users; --",
  '%00',
  '../../etc/passwd',
  'usr_01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a55',
  '01935D6E-7A3C-7C2E-9F10-2B6D0C1E4A55',
  'tn_',
  'null',
];
const BAD_NUMBERS: unknown[] = [
  -1,
  0,
  new Raw('-0'),
  1.5,
  2 ** 31,
  new Raw('9007199254740993'),
  new Raw('9223372036854775808'),
  new Raw('1e309'),
  new Raw('-1e309'),
  new Raw('1e-400'),
  new Raw('123456789012345678901234567890'),
  '1',
  'Infinity',
];
const BAD_SHAPES: unknown[] = [null, true, false, [], {}, ['x'], { a: 1 }, [[[[]]]], DEEP_ARRAY, DEEP_OBJECT, new Raw('{"__proto__":{"x":1}}')];

function badValue(schema: Schema | undefined, rng: Rng): unknown {
  schema = deref(schema) ?? {};
  const types = typesOf(schema);
  const pool: unknown[] = [...BAD_SHAPES];
  if (types.includes('string') || types.length === 0) pool.push(...BAD_STRINGS, ...BAD_STRINGS, '\u0000', 'nul\u0000');
  if (types.includes('integer') || types.includes('number')) pool.push(...BAD_NUMBERS, ...BAD_NUMBERS);
  if (types.includes('array')) pool.push(Array.from({ length: 10_000 }, () => 'x'), [null], ['\u0000'], [new Raw('1e309')]);
  if (types.includes('object')) pool.push({ extra: '\u0000' }, { ['k\u0000']: 1 }, Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, i])));
  if (types.includes('boolean')) pool.push('true', 0, 1);
  return rng.pick(pool);
}

const BAD_PARAMS = [
  'Infinity',
  '-Infinity',
  'NaN',
  '1e309',
  '-0',
  '0x10',
  ' ',
  '',
  '1.5',
  '-1',
  '9007199254740993',
  '9223372036854775808',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%F0%9F%98%80',
  '%C3%A9',
  '%2F',
  '..',
  'z'.repeat(6000),
  'tn_nope',
  'me',
];

// ---- requests -------------------------------------------------------------------------------------------

interface FuzzRequest {
  op: OperationShape;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

interface OperationShape {
  method: string;
  path: string;
  parameters: Schema[];
  bodySchema: Schema | undefined;
  visitor: boolean;
  isPublic: boolean;
  /** The answers the contract declares: status codes, `4XX`-style ranges, `default`. */
  responses: string[];
}

const operations: OperationShape[] = contract.operations.map((op) => {
  const item = doc.paths[op.path];
  const spec = item[op.method];
  const parameters = [...(item.parameters ?? []), ...(spec.parameters ?? [])].map((p: Schema) => deref(p));
  const requestBody = deref(spec.requestBody);
  const security: Record<string, string[]>[] = spec.security ?? doc.security ?? [];
  return {
    method: op.method,
    path: op.path,
    parameters,
    bodySchema: requestBody?.content?.['application/json']?.schema,
    visitor: security.some((r) => 'visitorAuth' in r),
    isPublic: security.length === 0 || security.some((r) => Object.keys(r).length === 0),
    responses: Object.keys(spec.responses ?? {}),
  };
});

const encode = (value: string): string =>
  // Values from BAD_PARAMS that hold % are written already encoded; the rest is encoded here.
  /%[0-9A-F]{2}/.test(value) ? value : value.isWellFormed() ? encodeURIComponent(value) : '%ED%A0%80';

function buildRequest(op: OperationShape, rng: Rng, fx: Fixture): FuzzRequest {
  const strategy = rng.next();
  const headers: Record<string, string> = {};
  if (op.visitor) {
    headers.authorization = `Bearer ${fx.visitorToken}`;
    headers.origin = ORIGIN;
  } else if (!op.isPublic || rng.chance(0.2)) {
    headers.authorization = `Bearer ${fx.tenant.owner.accessToken}`;
  }

  // Path: each parameter valid (known or unknown id), one of them broken a fifth of the time.
  const breakPath = strategy < 0.2;
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const brokenPathParam = breakPath && pathParams.length > 0 ? rng.pick(pathParams).name : undefined;
  const path =
    contract.basePath +
    op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const parameter = pathParams.find((p) => p.name === name);
      if (name === brokenPathParam) return encode(rng.pick(BAD_PARAMS));
      return encodeURIComponent(String(validValue(parameter?.schema, rng, fx)));
    });

  // Query: valid values for some parameters; broken, repeated or unknown ones in a fifth of requests.
  const query: string[] = [];
  const breakQuery = strategy >= 0.2 && strategy < 0.4;
  for (const p of op.parameters.filter((q) => q.in === 'query')) {
    if (rng.chance(0.3)) query.push(`${p.name}=${encodeURIComponent(String(validValue(p.schema, rng, fx)))}`);
  }
  if (breakQuery) {
    const named = op.parameters.filter((q) => q.in === 'query');
    const name = named.length > 0 && rng.chance(0.85) ? rng.pick(named).name : 'unknown_param';
    const form = rng.int(6);
    if (form === 0) query.push(`${name}=1`, `${name}=2`);
    else if (form === 1) query.push(`${name}[a]=1`);
    else if (form === 2) query.push(`${name}[]=1`);
    else query.push(`${name}=${encode(rng.pick(BAD_PARAMS))}`);
    if (rng.chance(0.3)) query.push(`${name}=${encode(rng.pick(BAD_PARAMS))}`);
  }

  // Headers the contract names (Idempotency-Key, ...), and X-Tenant-ID now and then.
  for (const p of op.parameters.filter((h) => h.in === 'header')) {
    // Origin is the visitor's credential's other half; it has its own tests (widget-api.test.ts).
    if (p.name.toLowerCase() === 'origin') continue;
    // 'fuzz-key' comes back with other bodies: the key's mismatch, and its replay, on every operation that takes one.
    if (rng.chance(0.5)) headers[p.name.toLowerCase()] = rng.pick([randomUUID(), '', 'k'.repeat(300), 'k'.repeat(255), 'é-latin1', ' ', `${rng.int(1000)}`, 'fuzz-key', 'fuzz-key']);
  }
  if (!op.visitor && rng.chance(0.1)) {
    headers['x-tenant-id'] = rng.pick([fx.tenant.tenantId, newId('tenant'), 'tn_nope', 'x'.repeat(500), `tn_${uuidv4()}`]);
  }

  // Body: a valid one with one field broken, a required one missing, an extra one, or a broken whole.
  let body: string | undefined;
  const schema = op.bodySchema;
  const breakBody = strategy >= 0.4;
  if (schema || rng.chance(0.05)) {
    const value = validValue(schema, rng, fx) as Record<string, unknown>;
    if (breakBody && value && typeof value === 'object' && !Array.isArray(value)) {
      const props = Object.entries<Schema>(deref(schema)?.properties ?? {});
      const choice = rng.next();
      if (choice < 0.6 && props.length > 0) {
        const [name, prop] = rng.pick(props);
        value[name] = badValue(prop, rng);
      } else if (choice < 0.7 && props.length > 0) {
        value[rng.pick(props)[0]] = MISSING;
      } else if (choice < 0.8) {
        value[rng.pick(['extra', '\u0000', 'constructor', '__proto__'])] = rng.pick(['x', 1, null]);
      }
    }
    body = breakBody && rng.chance(0.15) ? serialise(badValue(schema, rng)) : serialise(value);
  }

  // Content types and bodies that are not JSON at all.
  if (breakBody && rng.chance(0.15)) {
    const form = rng.int(9);
    if (form === 0) body = '{"name": ';
    else if (form === 1) body = '';
    else if (form === 2) body = 'null';
    else if (form === 3) body = '\u0000';
    else if (form === 4) body = '{"a":1}{"b":2}';
    else if (form === 5) body = `{"x":"${'z'.repeat(1_100_000)}"}`;
    if (form === 6) headers['content-type'] = 'text/plain';
    else if (form === 7) headers['content-type'] = 'application/x-www-form-urlencoded';
    else if (form === 8) headers['content-type'] = rng.pick(['application/json; charset=utf-16', 'multipart/form-data; boundary=x', 'application/merge-patch+json', 'application/xml']);
  }
  if (body !== undefined) headers['content-type'] ??= 'application/json';

  return { op, method: op.method.toUpperCase(), path: query.length > 0 ? `${path}?${query.join('&')}` : path, headers, body };
}

// ---- sending --------------------------------------------------------------------------------------------

interface Outcome {
  status: number;
  contentType: string;
  text: string;
}

function send(agent: http.Agent, port: number, req: FuzzRequest): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const outgoing = http.request(
      {
        host: '127.0.0.1',
        port,
        agent,
        method: req.method,
        path: req.path,
        headers: { ...req.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/**
 * Whether the contract lets the operation answer this status: a client generated from it has a type for it.
 * A 405 names no operation (an empty id made the path another one's, which lacks the method).
 */
const declares = (op: OperationShape, status: number) => status === 405 || declaresStatus(op.responses, status);

const excerpt = (text: string | undefined, n = 300) => (text === undefined ? '' : text.length > n ? `${text.slice(0, n)}… (${text.length} chars)` : text);

describe('fuzz: every operation of the contract, malformed and boundary input', function () {
  this.timeout(600_000);
  const fx = {} as Fixture;
  let server: http.Server;
  let port: number;

  before(async () => {
    const { app, database } = await getHarness();
    fx.tenant = await createTenant();
    const auth = { Authorization: `Bearer ${fx.tenant.owner.accessToken}` };
    // {userId} names a member the fuzz may change or remove, never the owner it authenticates as.
    const target = await addMember(fx.tenant, { role: 'agent' });
    const department = (await request(app).post('/api/v1/departments').set(auth).send({ name: 'fuzz' }).expect(201)).body;
    const contact = (await request(app).post('/api/v1/contacts').set(auth).send({ name: 'Fuzz', email: 'fuzz@example.test' }).expect(201)).body;
    const canned = (await request(app).post('/api/v1/canned-responses').set(auth).send({ shortcut: 'fuzz', title: 'Fuzz', content: 'Hello' }).expect(201)).body;
    const key = (await request(app).post('/api/v1/api-keys').set(auth).send({ name: 'fuzz', scopes: ['tenant:read'] }).expect(201)).body;
    const conversation = await createConversation(fx.tenant);
    // The visitor's own widget and domain are not handed to the fuzz (it would delete them).
    const ownWidget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'visitor' }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(auth).send({ widget_id: ownWidget.id, domain: new URL(ORIGIN).hostname }).expect(201);
    const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'fuzz' }).expect(201)).body;
    const domain = (await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'fuzz-other.example' }).expect(201)).body;
    const session = (
      await request(app).post('/api/v1/widget/sessions').set('Origin', ORIGIN).send({ widget_id: ownWidget.id, page_url: `${ORIGIN}/` }).expect(201)
    ).body;
    fx.visitorToken = session.visitor_token;
    const visitorConversation = (
      await request(app).post('/api/v1/widget/conversations').set('Origin', ORIGIN).set('Authorization', `Bearer ${fx.visitorToken}`).send({ content: 'Hi' }).expect(201)
    ).body;
    fx.ids = {
      tn: [fx.tenant.tenantId],
      usr: [target.userId],
      '': [department.id],
      ct: [contact.id],
      cr: [canned.id],
      key: [key.id],
      conv: [conversation.id, visitorConversation.id],
      vis: [session.visitor_id].filter(Boolean),
      wgt: [widget.id],
      dom: [domain.id],
    };
    void database;
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it(`${REQUESTS} requests (seed ${SEED}): no 5xx, no hang, every 4xx a problem the operation declares`, async () => {
    const rng = prng(SEED);
    // Built up front, so the sequence depends on the seed alone, not on how answers interleave.
    const requests = Array.from({ length: REQUESTS }, (_, i) => buildRequest(operations[i % operations.length]!, rng, fx));
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let fiveHundreds = 0;
    let next = 0;
    const started = Date.now();

    const worker = async () => {
      while (next < requests.length) {
        const req = requests[next++]!;
        const where = `${req.method} ${excerpt(req.path, 200)}\n      headers ${excerpt(JSON.stringify(req.headers), 300)}\n      body ${excerpt(req.body)}`;
        try {
          const res = await send(agent, port, req);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500) {
            fiveHundreds++;
            failures.push(`${res.status} for ${where}\n      answer ${excerpt(res.text)}`);
          } else if (res.status >= 400 && !res.contentType.startsWith('application/problem+json')) {
            failures.push(`${res.status} not problem+json (${res.contentType}) for ${where}\n      answer ${excerpt(res.text)}`);
          } else if (!declares(req.op, res.status)) {
            failures.push(`${res.status} is not among the answers ${req.op.method.toUpperCase()} ${req.op.path} declares (${req.op.responses.join(', ')}) for ${where}\n      answer ${excerpt(res.text)}`);
          }
        } catch (err) {
          failures.push(`no answer (${(err as Error).name}: ${(err as Error).message}) for ${where}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    agent.destroy();

    const seconds = (Date.now() - started) / 1000;
    recordFigure('fuzz', 'requests', requests.length);
    recordFigure('fuzz', '5xx', fiveHundreds);
    recordFigure('fuzz', 'failures (5xx, hangs, non-problem 4xx)', failures.length);
    recordFigure('fuzz', 'seconds', seconds.toFixed(1));
    recordFigure('fuzz', 'statuses', [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}:${n}`).join(' '));
    expect(failures.length, `seed ${SEED}: ${failures.length} failures; the first ones:\n    ${failures.slice(0, 15).join('\n    ')}`).to.equal(0);
    // The walk reached the handlers, not only the validator.
    expect([...statuses.keys()].some((s) => s >= 200 && s < 300), 'no request succeeded: the fixture is broken').to.equal(true);
  });
});
