import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { loadContract } from '../../src/http/contract.ts';
import { problemBody } from '../../src/http/problem.ts';
import { AppError } from '../../src/shared/errors.ts';

// Prism answers from the contract's examples, and people copy them: each must be valid against the
// schema it illustrates (bodies, headers, parameters), checked with JSON Schema 2020-12 as the service
// validates. The close example, for one, must show a closed conversation.
describe('the contract examples', () => {
  const document = loadContract().document;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'chat', components: document.components });

  const resolve = (node: any): any => {
    for (let hops = 0; node?.$ref && hops < 10; hops++) node = node.$ref.replace(/^#\//, '').split('/').reduce((at: any, k: string) => at?.[k], document);
    return node;
  };
  const refsToChat = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"chat#/'));

  interface Sample {
    where: string;
    schema: unknown;
    value: unknown;
  }
  const samples: Sample[] = [];
  const collect = (where: string, holder: any) => {
    holder = resolve(holder);
    if (!holder?.schema) return;
    if ('example' in holder) samples.push({ where, schema: holder.schema, value: holder.example });
    for (const [name, ex] of Object.entries<any>(holder.examples ?? {})) samples.push({ where: `${where} (${name})`, schema: holder.schema, value: resolve(ex).value });
  };
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      const at = `${method} ${path}`;
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) collect(`${at} parameter ${resolve(p).name}`, p);
      for (const [type, media] of Object.entries<any>(resolve(op.requestBody)?.content ?? {})) collect(`${at} request ${type}`, media);
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        const r = resolve(response);
        for (const [type, media] of Object.entries<any>(r.content ?? {})) collect(`${at} ${status} ${type}`, media);
        for (const [name, header] of Object.entries<any>(r.headers ?? {})) collect(`${at} ${status} header ${name}`, header);
      }
    }
  }

  it('are many: every response header has one', () => {
    expect(samples.length).to.be.greaterThan(300);
    const headers = Object.values<any>(document.components.headers);
    for (const h of headers) expect(h, JSON.stringify(h)).to.have.property('example');
  });

  it('each validates against its schema', () => {
    const failures: string[] = [];
    for (const { where, schema, value } of samples) {
      const validate = ajv.compile(refsToChat(schema) as object);
      if (!validate(value)) failures.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(failures).to.deep.equal([]);
  });

  it('close shows a closed conversation (not yet rated); reopen an open, unassigned one', () => {
    const close = document.paths['/v1/conversations/{id}/close'].post.responses['200'].content['application/json'].example.conversation;
    expect(close).to.include({ status: 'closed' });
    expect(close.closed_at).to.be.a('string');
    expect(close.satisfaction).to.equal(null);
    const reopen = document.paths['/v1/conversations/{id}/reopen'].post.responses['200'].content['application/json'].example.conversation;
    expect(reopen).to.include({ status: 'open', assigned_to: null });
  });

  // Every string and template literal of src/: a detail in an example must be one the service sends
  // (a template's ${...} parts match anything).
  const sourceText = (dir: URL): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceText(new URL(`${e.name}/`, dir)) : e.name.endsWith('.ts') ? [readFileSync(new URL(e.name, dir), 'utf8')] : []));
  const sources = sourceText(new URL('../../src/', import.meta.url));
  const literals = sources.flatMap((text) => [...text.matchAll(/'((?:[^'\\\n]|\\.)*)'|`([^`]*)`/g)].map((m) => (m[1] ?? m[2])!.replaceAll("\\'", "'")));
  // A template counts only with enough words of its own: `${what} not found` alone would match anything.
  const sentDetails = literals.filter((l) => l.replace(/\$\{[^}]*\}/g, '').length >= 15).map((l) => new RegExp(`^${l.split(/\$\{[^}]*\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`));
  const notFoundOf = sources.flatMap((t) => [...t.matchAll(/notFound\('([^']+)'\)/g)].map((m) => `${m[1]} not found`));
  const sends = (detail: string) => notFoundOf.includes(detail) || sentDetails.some((re) => re.test(detail));

  const GENERIC = new Set(['NotFound', 'Conflict', 'UnprocessableContent']);
  it('every error an operation answers has examples with its real code and a detail the service sends, as the service shapes them', () => {
    const findings: string[] = [];
    for (const [path, item] of Object.entries<any>(document.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
        const at = `${method.toUpperCase()} ${path} (${op.operationId})`;
        for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
          if (!/^[45]/.test(status)) continue;
          const name = response.$ref?.split('/').pop();
          if (GENERIC.has(name)) {
            findings.push(`${at} ${status}: uses the generic ${name}; reference a response of components/responses whose examples are what this operation answers (e.g. ConversationNotFound, MemberConflict), or add one`);
            continue;
          }
          const media = resolve(response).content?.['application/problem+json'];
          const examples = media ? [...('example' in media ? [['example', media.example]] : []), ...Object.entries<any>(media.examples ?? {}).map(([k, e]) => [k, resolve(e).value])] : [];
          if (examples.length === 0) findings.push(`${at} ${status}: no application/problem+json example`);
          for (const [label, value] of examples as [string, any][]) {
            const where = `${at} ${status} example ${label}`;
            if (String(value?.status) !== status) findings.push(`${where}: status ${value?.status} in a ${status} response`);
            if (!document.components.schemas.ErrorCode.enum.includes(value?.code)) {
              findings.push(`${where}: code ${value?.code} is not one of ErrorCode`);
              continue;
            }
            const shaped = problemBody(new AppError(value.code, value.detail), value.request_id);
            const { errors: _errors, ...rest } = value;
            if (JSON.stringify(rest) !== JSON.stringify(shaped)) findings.push(`${where}: the service would send ${JSON.stringify(shaped)}`);
            if (!sends(value.detail)) findings.push(`${where}: no code in src/ sends the detail ${JSON.stringify(value.detail)}`);
          }
        }
      }
    }
    expect(findings).to.deep.equal([]);
  });

  it('a detail counts as sent when src/ has it, literally, from notFound(), or from a template', () => {
    expect(sends('Tenant not found')).to.equal(true);
    expect(sends('Banana not found')).to.equal(false);
    expect(sends('The widget already allows shop.example.com')).to.equal(true);
    expect(sends('The webhook is disabled; enable it later')).to.equal(false);
  });

  it('conversation actions show their own 404 and 409 first: the mock answers what the service would', () => {
    const first = (path: string, status: string) => {
      const media = resolve(document.paths[path].post.responses[status]).content['application/problem+json'];
      return resolve(Object.values<any>(media.examples)[0]).value;
    };
    expect(first('/v1/conversations/{id}/close', '404')).to.include({ code: 'ERR_NOT_FOUND', detail: 'Conversation not found' });
    expect(first('/v1/conversations/{id}/close', '409')).to.include({ code: 'ERR_CONVERSATION_CLOSED' });
    expect(first('/v1/conversations/{id}/reopen', '409')).to.include({ code: 'ERR_CONVERSATION_NOT_CLOSED' });
    expect(first('/v1/auth/register', '409')).to.include({ detail: 'The e-mail address is already registered' });
    expect(first('/v1/contacts', '409')).to.include({ detail: 'A contact with that e-mail address already exists' });
  });
});
