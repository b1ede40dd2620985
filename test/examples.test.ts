import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { loadContract } from '../src/http/contract.ts';

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
});
