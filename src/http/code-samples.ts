// A code sample per operation, in curl and in TypeScript with the SDK (@customer-chat/client), made from the
// contract: the operation's method, path, credential, required parameters and its request body's example.
// They are added to the served reference as `x-codeSamples` (Redoc shows them beside each operation); the
// contract itself holds none. What a sample cannot know is a variable, the same name in both languages:
// API (the server URL ending in /api), TOKEN and REFRESH_TOKEN (a login's), VISITOR_TOKEN and ORIGIN (a
// visitor's session and the page's origin), and the ids the path or body names (CONVERSATION_ID, ...).
// test/e2e/doc-samples.test.ts runs every operation's samples against the service with those set.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Doc = Record<string, any>;

export interface CodeSample {
  lang: 'curl' | 'TypeScript';
  label: string;
  source: string;
}

export interface OperationRef {
  method: string;
  path: string;
  operation: Doc;
  /** Parameters of the path item shared by its operations. */
  pathParameters: Doc[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every operation of the document, in its order. */
export function operationsOf(document: Doc): OperationRef[] {
  const out: OperationRef[] = [];
  for (const [path, item] of Object.entries<Doc>(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation?.operationId) out.push({ method, path, operation, pathParameters: item.parameters ?? [] });
    }
  }
  return out;
}

const deref = (document: Doc, node: Doc): Doc => {
  let at = node;
  for (let i = 0; i < 10 && typeof at?.$ref === 'string'; i++) {
    at = (at.$ref as string).slice(2).split('/').reduce<any>((o, k) => o?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], document);
  }
  return at;
};

const upper = (name: string) =>
  name
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();

/** The variable an id-like value stands for, by its prefix (`conv_…` is CONVERSATION_ID). */
const PREFIX_VARIABLES: Record<string, string> = {
  tn: 'TENANT_ID', usr: 'USER_ID', conv: 'CONVERSATION_ID', vis: 'VISITOR_ID', msg: 'MESSAGE_ID', ct: 'CONTACT_ID', wgt: 'WIDGET_ID',
  dom: 'DOMAIN_ID', cr: 'CANNED_RESPONSE_ID', file: 'FILE_ID', key: 'API_KEY_ID', whk: 'WEBHOOK_ID', whd: 'DELIVERY_ID', bot: 'BOT_ID',
  wf: 'WORKFLOW_ID', lbl: 'LABEL_ID', evt: 'EVENT_ID',
};
const ID_VALUE = /^([a-z]+)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A path parameter's variable: `userId` is USER_ID, `{id}` after `/conversations` is CONVERSATION_ID. */
function pathVariable(path: string, name: string): string {
  if (name !== 'id') return upper(name.endsWith('_id') || name.endsWith('Id') ? name : `${name}_id`);
  const segments = path.split('/');
  const before = segments[segments.indexOf('{id}') - 1] ?? 'item';
  const singular = before.replace(/ies$/, 'y').replace(/s$/, '');
  return `${upper(singular)}_ID`;
}

/** A value in a sample: a literal, or a variable named by where it stands. */
type Value = { literal: Json } | { variable: string };

/** Body properties whose example values a sample cannot use as they are (they name someone or something of the reader's). */
const PROPERTY_VARIABLES: Record<string, string> = { email: 'EMAIL', password: 'PASSWORD', refresh_token: 'REFRESH_TOKEN', token: 'MAIL_TOKEN', until: 'UNTIL' };

/** The example with the values a reader must supply turned into variables (marked, to be written per language). */
type Marked = Json | { __variable: string };
function markVariables(value: Json, key?: string): Marked {
  if (typeof value === 'string') {
    if (key && PROPERTY_VARIABLES[key]) return { __variable: PROPERTY_VARIABLES[key] };
    const prefix = ID_VALUE.exec(value)?.[1];
    if (prefix && PREFIX_VARIABLES[prefix]) return { __variable: PREFIX_VARIABLES[prefix] };
    if (key?.endsWith('_id') && /^[0-9a-f-]{36}$/.test(value)) return { __variable: upper(key) };
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => markVariables(v)) as Marked;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, markVariables(v, k)])) as Marked;
  return value;
}
const isVariable = (v: unknown): v is { __variable: string } => typeof v === 'object' && v !== null && '__variable' in v;

/** The request body's first example, from the media type's example, its examples, or the schema's. */
function bodyExample(document: Doc, media: Doc): Json | undefined {
  if (media.example !== undefined) return media.example;
  const first = Object.values<Doc>(media.examples ?? {})[0];
  if (first) return deref(document, first).value;
  return deref(document, media.schema ?? {}).example;
}

interface Parts {
  method: string;
  path: string;
  pathParams: { name: string; variable: string }[];
  query: { name: string; value: Value }[];
  headers: { name: string; value: Value }[];
  credential: 'bearer' | 'visitor' | 'none';
  body?: { type: 'json'; value: Marked } | { type: 'multipart'; fields: { name: string; value: Marked; file: boolean }[] };
  /** The answer is not JSON (a file's bytes). */
  binaryAnswer: boolean;
}

function partsOf(document: Doc, ref: OperationRef): Parts {
  const { method, path, operation } = ref;
  const parameters = [...ref.pathParameters, ...(operation.parameters ?? [])].map((p) => deref(document, p));
  const security: Doc[] = operation.security ?? document.security ?? [];
  const schemes = security.flatMap((s) => Object.keys(s));
  const credential = schemes.includes('bearerAuth') ? 'bearer' : schemes.includes('visitorAuth') ? 'visitor' : 'none';
  const parameterValue = (p: Doc): Value => {
    const example = p.example ?? p.schema?.example;
    return example !== undefined ? { literal: example } : { variable: upper(p.name) };
  };
  const parts: Parts = {
    method,
    path,
    pathParams: parameters.filter((p) => p.in === 'path').map((p) => ({ name: p.name, variable: pathVariable(path, p.name) })),
    query: parameters.filter((p) => p.in === 'query' && p.required).map((p) => ({ name: p.name, value: parameterValue(p) })),
    headers: parameters.filter((p) => p.in === 'header' && p.required).map((p) => ({ name: p.name, value: parameterValue(p) })),
    credential,
    binaryAnswer: false,
  };
  const success = Object.entries<Doc>(operation.responses ?? {}).find(([status]) => /^2/.test(status))?.[1];
  const answerTypes = Object.keys(deref(document, success ?? {}).content ?? {});
  parts.binaryAnswer = answerTypes.length > 0 && !answerTypes.some((t) => t.includes('json'));
  const content: Doc = deref(document, operation.requestBody ?? {}).content ?? {};
  if (content['application/json']) {
    const example = bodyExample(document, content['application/json']);
    if (example !== undefined) parts.body = { type: 'json', value: markVariables(example) };
  } else if (content['multipart/form-data']) {
    const media = content['multipart/form-data'];
    const schema = deref(document, media.schema ?? {});
    const example = (bodyExample(document, media) ?? {}) as Record<string, Json>;
    const fields = Object.entries<Doc>(schema.properties ?? {})
      .filter(([name]) => (schema.required ?? []).includes(name) || example[name] !== undefined)
      .map(([name, property]) => {
        const file = deref(document, property).format === 'binary' || deref(document, property).contentMediaType !== undefined;
        return { name, file, value: file ? { __variable: 'FILE_PATH' } : markVariables(example[name] ?? null, name) };
      });
    parts.body = { type: 'multipart', fields };
  }
  return parts;
}

// curl: variables are shell variables; a JSON body is a here-document, so they expand inside it.
const shellQuoteLiteral = (text: string) => text.replace(/[\\$`"]/g, (c) => `\\${c}`);
// In a here-document only backslash, `$` and the backtick are special.
const heredocLiteral = (text: string) => text.replace(/[\\$`]/g, (c) => `\\${c}`);
const curlValue = (v: Value) => ('variable' in v ? `$${v.variable}` : shellQuoteLiteral(String(v.literal)));

function curlSample(p: Parts): string {
  const url = `$API${p.path.replace(/\{(\w+)\}/g, (_, name: string) => `$${p.pathParams.find((x) => x.name === name)?.variable ?? upper(name)}`)}`;
  const query = p.query.map((q) => `${q.name}=${'variable' in q.value ? `$${q.value.variable}` : encodeURIComponent(String(q.value.literal))}`).join('&');
  const lines = [`curl -sS${p.method === 'get' ? '' : ` -X ${p.method.toUpperCase()}`} "${url}${query ? `?${query}` : ''}"`];
  if (p.credential === 'bearer') lines.push(`-H "Authorization: Bearer $TOKEN"`);
  if (p.credential === 'visitor') lines.push(`-H "Authorization: Bearer $VISITOR_TOKEN"`);
  for (const h of p.headers) lines.push(`-H "${h.name}: ${curlValue(h.value)}"`);
  let heredoc: string | undefined;
  if (p.body?.type === 'json') {
    lines.push(`-H 'Content-Type: application/json'`, '--data-binary @- <<JSON');
    heredoc = `${jsonText(p.body.value, (name) => `"$${name}"`, heredocLiteral)}\nJSON`;
  } else if (p.body?.type === 'multipart') {
    for (const f of p.body.fields) {
      const value = isVariable(f.value) ? `${f.file ? '@' : ''}$${f.value.__variable}` : shellQuoteLiteral(typeof f.value === 'string' ? f.value : JSON.stringify(f.value));
      lines.push(`-F "${f.name}=${value}"`);
    }
  }
  if (p.binaryAnswer) lines.push('-o downloaded.bin');
  const command = lines.join(' \\\n  ');
  return heredoc ? `${command}\n${heredoc}` : command;
}

/**
 * JSON text of a marked value, indented, with each variable written by `variable` and each string
 * literal's text passed through `escape` (JSON.stringify has quoted it already).
 */
function jsonText(value: Marked, variable: (name: string) => string, escape: (s: string) => string = (s) => s, indent = ''): string {
  const inner = `${indent}  `;
  if (isVariable(value)) return variable(value.__variable);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((v) => v === null || typeof v !== 'object')) return `[${value.map((v) => jsonText(v, variable, escape)).join(', ')}]`;
    return `[\n${value.map((v) => inner + jsonText(v, variable, escape, inner)).join(',\n')}\n${indent}]`;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${escape(JSON.stringify(k))}: ${jsonText(v as Marked, variable, escape, inner)}`).join(',\n')}\n${indent}}`;
  }
  return escape(JSON.stringify(value));
}

// TypeScript: variables are constants of the reader's; the body an object literal.
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
function tsLiteral(value: Marked, indent: string): string {
  const inner = `${indent}  `;
  if (isVariable(value)) return value.__variable;
  if (Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object' || isVariable(v))) return `[${value.map((v) => tsLiteral(v, inner)).join(', ')}]`;
  if (Array.isArray(value)) return value.length === 0 ? '[]' : `[\n${value.map((v) => inner + tsLiteral(v, inner)).join(',\n')},\n${indent}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${IDENTIFIER.test(k) ? k : JSON.stringify(k)}: ${tsLiteral(v as Marked, inner)}`).join(',\n')},\n${indent}}`;
  }
  return typeof value === 'string' ? `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'` : JSON.stringify(value);
}
const tsValue = (v: Value) => ('variable' in v ? v.variable : JSON.stringify(v.literal));

function typeScriptSample(p: Parts): string {
  const imports = [`import { ChatClient, ok } from '@customer-chat/client';`];
  const lines: string[] = [];
  const client = p.credential === 'bearer' ? `new ChatClient({ baseUrl: API, tokens: { access_token: TOKEN, refresh_token: REFRESH_TOKEN } })` : 'new ChatClient({ baseUrl: API })';
  const options: string[] = [];
  const params: string[] = [];
  if (p.pathParams.length) params.push(`path: { ${p.pathParams.map((x) => `${IDENTIFIER.test(x.name) ? x.name : JSON.stringify(x.name)}: ${x.variable}`).join(', ')} }`);
  if (p.query.length) params.push(`query: { ${p.query.map((q) => `${IDENTIFIER.test(q.name) ? q.name : JSON.stringify(q.name)}: ${tsValue(q.value)}`).join(', ')} }`);
  if (p.headers.length) params.push(`header: { ${p.headers.map((h) => `${IDENTIFIER.test(h.name) ? h.name : JSON.stringify(h.name)}: ${tsValue(h.value)}`).join(', ')} }`);
  if (params.length) options.push(`params: { ${params.join(', ')} }`);
  if (p.credential === 'visitor') options.push('headers: { Authorization: `Bearer ${VISITOR_TOKEN}` }');
  if (p.body?.type === 'json') options.push(`body: ${tsLiteral(p.body.value, '  ')}`);
  if (p.body?.type === 'multipart') {
    imports.push(`import { readFile } from 'node:fs/promises';`);
    lines.push('const form = new FormData();');
    for (const f of p.body.fields) {
      if (f.file) lines.push(`form.append('${f.name}', new Blob([await readFile(${isVariable(f.value) ? f.value.__variable : JSON.stringify(f.value)})], { type: 'image/png' }), 'photo.png');`);
      else lines.push(`form.append('${f.name}', ${isVariable(f.value) ? f.value.__variable : tsLiteral(f.value, '')});`);
    }
    // openapi-fetch sends a FormData as it is when the serializer hands it back.
    options.push('body: form as never', 'bodySerializer: (body: unknown) => body as FormData');
  }
  if (p.binaryAnswer) options.push(`parseAs: 'blob'`);
  const call = `chat.api.${p.method.toUpperCase()}('${p.path}'${options.length ? `, {\n  ${options.join(',\n  ')},\n}` : ''})`;
  return [...imports, '', `const chat = ${client};`, ...lines, `const answer = await ok(${call});`, 'console.log(answer);'].join('\n');
}

/** The operation's samples: curl first, then TypeScript with the SDK. */
export function codeSamples(document: Doc, ref: OperationRef): CodeSample[] {
  const parts = partsOf(document, ref);
  return [
    { lang: 'curl', label: 'curl', source: curlSample(parts) },
    { lang: 'TypeScript', label: 'TypeScript (SDK)', source: typeScriptSample(parts) },
  ];
}

/** A copy of the document with every operation's samples as its `x-codeSamples`. */
export function withCodeSamples(document: Doc): Doc {
  const copy = structuredClone(document);
  for (const ref of operationsOf(copy)) ref.operation['x-codeSamples'] = codeSamples(copy, ref);
  return copy;
}

/** The variables a sample uses: `$NAME` in curl, bare upper-case identifiers in TypeScript. */
export function variablesOf(sample: CodeSample): string[] {
  const pattern = sample.lang === 'curl' ? /\$([A-Z][A-Z0-9_]*)/g : /\b([A-Z][A-Z0-9_]*)\b/g;
  // TypeScript's string literals are left out: their words are text, not variables.
  const code = sample.lang === 'curl' ? sample.source : sample.source.replace(/'(?:[^'\\\n]|\\.)*'/g, "''");
  const names = new Set([...code.matchAll(pattern)].map((m) => m[1]!));
  return [...names].filter((n) => !['JSON', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(n)).sort();
}
