// `npm run spec:diff [base]`: what changed in the contract (openapi/chat.yaml) since a git ref, per
// operation, each change classified by api-smart-diff as breaking, non-breaking, deprecated or annotation.
// Exits 1 on a breaking change under /v1 that was not announced, and on a deprecation that does not give
// six months' notice. An intended break is one to an operation that the base already deprecated and whose
// `x-sunset` has come; a deprecation lands as `deprecated: true` with `x-deprecated-at` and an `x-sunset`
// at least six months ahead, and the service then answers that operation with Deprecation and Sunset headers.
//
//   node scripts/spec-diff.ts [base]                  base: a git ref; default the merge base with main,
//                                                     or on main itself (CI's clean clone) the first parent
//   node scripts/spec-diff.ts --before A.yaml --after B.yaml   two files (the tests use it)
//   --format markdown                                 Markdown for a pull request comment (default: text)
//
// A change to a shared schema reaches every operation that uses it: it is one entry, naming the schema
// where it was made and the operations it reaches, not a line under each of them.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { apiCompare } from 'api-smart-diff';
import { parse } from 'yaml';

const CONTRACT = 'openapi/chat.yaml';
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
const SIX_MONTHS_MS = 182 * 24 * 3600 * 1000;

type Doc = Record<string, any>;
interface Change {
  type: string;
  action: string;
  where: string;
  description: string;
  /** `where` as the diff's path segments (a content type like application/json is one). */
  segments?: string[];
  before?: unknown;
  after?: unknown;
}

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  if (at === -1) return undefined;
  const [, value] = args.splice(at, 2);
  return value;
};
const git = (...a: string[]) => execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
const tryGit = (...a: string[]): string | undefined => {
  try {
    return git(...a);
  } catch {
    return undefined;
  }
};

function defaultBase(): { ref: string; why: string } | undefined {
  const head = tryGit('rev-parse', 'HEAD');
  for (const main of ['main', 'origin/main']) {
    const mainCommit = tryGit('rev-parse', '--verify', '-q', `${main}^{commit}`);
    if (!mainCommit || mainCommit === head) continue;
    const base = tryGit('merge-base', 'HEAD', main);
    if (base && base !== head) return { ref: base, why: `the merge base with ${main}` };
  }
  // On main (CI's clean clone): what main was before the last landing, its first parent.
  const parent = tryGit('rev-parse', '--verify', '-q', 'HEAD^1^{commit}');
  return parent ? { ref: parent, why: 'HEAD^1, main before the last commit landed' } : undefined;
}

let before: Doc;
let after: Doc;
let label: string;
let baseRef: string | undefined;
const format = option('--format') ?? 'text';
if (format !== 'text' && format !== 'markdown') throw new Error(`--format is text or markdown, not ${format}`);
const beforeFile = option('--before');
const afterFile = option('--after');
if (beforeFile || afterFile) {
  if (!beforeFile || !afterFile) throw new Error('--before and --after go together');
  before = parse(readFileSync(beforeFile, 'utf8'));
  after = parse(readFileSync(afterFile, 'utf8'));
  label = `${beforeFile} -> ${afterFile}`;
} else {
  const base = args[0] ? { ref: args[0], why: 'given' } : defaultBase();
  if (!base) {
    console.log('spec:diff: no earlier commit to compare with (a single-commit clone); nothing to report');
    process.exit(0);
  }
  baseRef = base.ref;
  const text = tryGit('show', `${base.ref}:${CONTRACT}`);
  if (text === undefined && !tryGit('rev-parse', '--verify', '-q', `${base.ref}^{commit}`)) throw new Error(`spec:diff: ${base.ref} is not a commit here`);
  before = text === undefined ? { openapi: '3.1.0', paths: {} } : parse(text);
  after = parse(readFileSync(CONTRACT, 'utf8'));
  label = `${CONTRACT} at ${base.ref.slice(0, 12)} (${base.why}) -> the working tree`;
}

// api-smart-diff resolves every $ref, so a change to a shared schema shows on each operation that uses it;
// the components' own entries would say it twice.
// It also rewrites the documents it is given (inlines references, drops extensions): the rules below read copies.
const pristine = { before: structuredClone(before), after: structuredClone(after) };
const { diffs } = apiCompare(before, after);
const byOperation = new Map<string, Change[]>();
const add = (key: string, change: Change) => byOperation.set(key, [...(byOperation.get(key) ?? []), change]);
const operationKey = (path: string, method: string, doc: Doc) => `${method.toUpperCase()} ${path}${doc.paths?.[path]?.[method]?.operationId ? ` (${doc.paths[path][method].operationId})` : ''}`;
/** The components' own changes: where a change that reaches operations was made (see `originOf`). */
const componentChanges: { origin: string; segments: string[]; action: string; before: unknown; after: unknown }[] = [];
for (const d of diffs) {
  const [top, path, method, ...rest] = d.path.map(String);
  if (top === 'components') {
    if (path === 'schemas' && method !== undefined) componentChanges.push({ origin: d.path.map(String).join('.'), segments: rest, action: d.action, before: d.before, after: d.after });
    continue;
  }
  const change: Change = {
    type: d.type,
    action: d.action,
    where: rest.join('.'),
    description: d.description ?? `${d.action} ${d.path.join('.')}`,
    segments: rest,
    before: d.before,
    after: d.after,
  };
  if (top !== 'paths' || path === undefined) add('(document)', { ...change, where: d.path.join('.') });
  else if (method !== undefined && METHODS.has(method)) add(operationKey(path, method, d.action === 'remove' && rest.length === 0 ? before : after), change);
  else if (method === undefined) {
    // A whole path added or removed: each of its operations.
    const item = (d.action === 'remove' ? before : after).paths?.[path] ?? {};
    for (const m of Object.keys(item).filter((k) => METHODS.has(k))) add(operationKey(path, m, d.action === 'remove' ? before : after), { ...change, description: `${d.action === 'remove' ? '[Removed]' : '[Added]'} operation ${m.toUpperCase()} ${path}` });
  } else add(operationKey(path, '*', after), { ...change, where: [method, ...rest].join('.') });
}

// The rules on top of the classification.
const now = Date.now();
const problems: string[] = [];
const sunsetOf = (op: Doc | undefined) => (op?.deprecated && typeof op['x-sunset'] === 'string' ? new Date(op['x-sunset']).getTime() : undefined);
const intended = (path: string, method: string): string | undefined => {
  const sunset = sunsetOf(before.paths?.[path]?.[method]);
  return sunset !== undefined && sunset <= now ? `deprecated, sunset ${before.paths[path][method]['x-sunset']} passed` : undefined;
};
for (const [path, item] of Object.entries<Doc>(after.paths ?? {})) {
  for (const [method, op] of Object.entries<Doc>(item)) {
    if (!METHODS.has(method) || !op?.deprecated || before.paths?.[path]?.[method]?.deprecated) continue;
    const sunset = sunsetOf(op);
    const key = operationKey(path, method, after);
    if (sunset === undefined || !op['x-deprecated-at']) problems.push(`${key}: newly deprecated without x-deprecated-at and x-sunset (dates): clients need to be told when it goes`);
    else if (sunset - now < SIX_MONTHS_MS) problems.push(`${key}: newly deprecated with x-sunset ${op['x-sunset']}, less than six months ahead`);
  }
}

// Open sets: a schema marked `x-extensible: true` (event types, API key scopes, the Event union) may gain
// values and members, and clients are told to accept ones they do not know (the spec's info says so).
// api-smart-diff compares enums by position, so a value inserted in order shows as "replaced": the change is
// an addition when the old values are all still there.
function resolvePath(doc: Doc, segments: string[]): Doc | undefined {
  let node: any = doc;
  for (const segment of segments) {
    while (node && typeof node.$ref === 'string') node = resolvePath(doc, node.$ref.replace(/^#\//, '').split('/').map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~')));
    if (node === undefined || node === null || typeof node !== 'object') return undefined;
    node = node[segment];
  }
  while (node && typeof node.$ref === 'string') node = resolvePath(doc, node.$ref.replace(/^#\//, '').split('/').map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~')));
  return node;
}
function growsOpenSet(path: string, method: string, where: string): boolean {
  const segments = where.split('.');
  // The path names content types like application/json whole; rejoin what split on their dots.
  const at = segments.findIndex((s) => s === 'enum' || s === 'oneOf');
  if (at < 1) return false;
  const base = ['paths', path, method, ...rejoin(segments.slice(0, at))];
  const beforeSchema = resolvePath(pristine.before, base);
  const afterSchema = resolvePath(pristine.after, base);
  if (!afterSchema?.['x-extensible'] || !beforeSchema) return false;
  const key = segments[at] as 'enum' | 'oneOf';
  const old: unknown[] = beforeSchema[key] ?? [];
  const now: unknown[] = afterSchema[key] ?? [];
  // A union's members are known by what they discriminate on (api-smart-diff inlines references, and a
  // member's other fields may change compatibly); an enum's values by themselves.
  const same = (a: unknown) => (key === 'oneOf' ? JSON.stringify(discriminatorOf(a) ?? a) : JSON.stringify(a));
  return now.length > old.length && old.every((v) => now.some((w) => same(w) === same(v)));
}
function discriminatorOf(schema: any): unknown {
  if (!schema || typeof schema !== 'object') return undefined;
  if (typeof schema.$ref === 'string') return schema.$ref.split('/').at(-1);
  if (schema.properties?.type) return schema.properties.type;
  for (const part of schema.allOf ?? []) {
    const found = discriminatorOf(part);
    if (found !== undefined) return found;
  }
  return undefined;
}
function rejoin(segments: string[]): string[] {
  const out: string[] = [];
  for (const s of segments) {
    const last = out.at(-1);
    if (last !== undefined && /^(application|text|multipart)\/[^.]*$/.test(last) && !/^(schema|example|examples)$/.test(s)) out[out.length - 1] = `${last}.${s}`;
    else out.push(s);
  }
  return out;
}
// A response field whose type grows (`string` to `[string, null]`, `integer` to `number`) breaks a client
// that reads it as before: it meets a value it was told it would never get. api-smart-diff calls the
// change an annotation, non-breaking. (In a request, a wider type is compatible: it stays as classified.)
function widensResponseType(path: string, method: string, where: string): boolean {
  const segments = where.split('.');
  if (segments[0] !== 'responses' || segments.at(-1) !== 'type') return false;
  // A field named `type` in an example is a value shown to readers, not a schema's type.
  if (segments.includes('example') || segments.includes('examples')) return false;
  const base = ['paths', path, method, ...rejoin(segments.slice(0, -1))];
  const typesOf = (schema: Doc | undefined): string[] => (schema === undefined ? [] : Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]);
  const old = typesOf(resolvePath(pristine.before, base));
  const now = typesOf(resolvePath(pristine.after, base));
  return old.length > 0 && now.some((t) => !old.includes(t));
}

/** Whether a schema lets null through: `type` naming it, OpenAPI 3.0's `nullable`, a union member that does, a null value. */
function admitsNull(schema: any): boolean {
  if (!schema || typeof schema !== 'object') return false;
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null')) || schema.nullable === true) return true;
  if (schema.const === null || (Array.isArray(schema.enum) && schema.enum.includes(null))) return true;
  return [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].some((member: any) => admitsNull(member));
}
const SCHEMA_KEYWORDS = new Set(['type', 'nullable', 'anyOf', 'oneOf', 'enum', 'const']);
/** The schema a change under a response is made in: the segments up to its last schema keyword. */
function responseSchemaAt(segments: string[] | undefined): string[] | undefined {
  if (!segments || segments[0] !== 'responses') return undefined;
  for (let at = segments.length - 1; at > 0; at--) if (SCHEMA_KEYWORDS.has(segments[at]!) && segments[at - 1] !== 'properties') return segments.slice(0, at);
  return undefined;
}
/**
 * How a response field widened, or undefined: it may now be null, or a closed enum (no `x-extensible`) has
 * values it had not. A client that reads it as before meets what it was told never comes.
 */
function widenedResponse(path: string, method: string, segments: string[] | undefined): string | undefined {
  const at = responseSchemaAt(segments);
  if (!at) return undefined;
  const beforeSchema = resolvePath(pristine.before, ['paths', path, method, ...at]);
  const afterSchema = resolvePath(pristine.after, ['paths', path, method, ...at]);
  if (!beforeSchema || !afterSchema) return undefined;
  const field = at.filter((_, i) => at[i - 1] === 'properties').join('.') || 'the body';
  if (admitsNull(afterSchema) && !admitsNull(beforeSchema)) return `\`${field}\` may now be null in a response`;
  if (Array.isArray(beforeSchema.enum) && Array.isArray(afterSchema.enum) && !afterSchema['x-extensible']) {
    const added = afterSchema.enum.filter((v: unknown) => !beforeSchema.enum.some((w: unknown) => JSON.stringify(w) === JSON.stringify(v)));
    if (added.length > 0) return `\`${field}\` in a response may now be ${added.map((v: unknown) => `\`${String(v)}\``).join(', ')} (a closed enum: no x-extensible)`;
  }
  return undefined;
}

/** A request field's `type` that only grew (`string` to `[string, null]`): every value sent before still passes. */
function widensRequestType(path: string, method: string, segments: string[] | undefined): boolean {
  if (!segments || (segments[0] !== 'requestBody' && segments[0] !== 'parameters') || segments.at(-1) !== 'type') return false;
  const base = ['paths', path, method, ...segments.slice(0, -1)];
  const typesOf = (schema: Doc | undefined): string[] => (schema === undefined ? [] : Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]);
  const old = typesOf(resolvePath(pristine.before, base));
  const now = typesOf(resolvePath(pristine.after, base));
  return old.length > 0 && now.length > old.length && old.every((t) => now.includes(t));
}

/**
 * Whether `after` is `before` with alternatives added and nothing else: each insertion is `|…` (balanced, no
 * lookaround) placed before another alternative's `|` or a group's `)`, the group not a lookaround. Every string the old
 * pattern matched, the new one matches too. Anything else (a changed character class, a quantifier, a
 * rewritten pattern) is not proven wider here and stays as classified.
 */
export function patternOnlyGrew(before: string, after: string): boolean {
  if (after.length <= before.length) return false;
  const lookaround = (text: string, open: number) => text[open + 1] === '?' && '=!<'.includes(text[open + 2] ?? '');
  /** Where the group around position `at` of `before` opens (-1 at the top level). */
  const groupOpen = (at: number) => {
    for (let depth = 0, m = at - 1; m >= 0; m--) {
      if (before[m - 1] === '\\') continue;
      if (before[m] === ')') depth++;
      else if (before[m] === '(' && depth-- === 0) return m;
    }
    return -1;
  };
  /** The ends of an alternative inserted at `j` of `after` (`|…`, balanced, no lookaround): where it may stop. */
  const insertionEnds = (j: number): number[] => {
    const ends: number[] = [];
    for (let depth = 0, k = j + 1; k < after.length; k++) {
      const ch = after[k];
      if (ch === '\\') {
        k++;
        continue;
      }
      if (ch === '(') {
        if (lookaround(after, k)) return ends;
        depth++;
      } else if (ch === ')') {
        if (depth === 0) return [...ends, k];
        depth--;
      } else if (ch === '|' && depth === 0) ends.push(k);
    }
    return ends;
  };
  const seen = new Map<string, boolean>();
  const walk = (i: number, j: number, grew: boolean): boolean => {
    const key = `${i},${j},${grew}`;
    const known = seen.get(key);
    if (known !== undefined) return known;
    let ok = false;
    if (i === before.length && j === after.length) ok = grew;
    else {
      // An alternative added before another alternative's `|` or a group's `)`, the group no lookaround.
      if (after[j] === '|' && (before[i] === '|' || before[i] === ')') && before[i - 1] !== '\\') {
        const open = groupOpen(i);
        if ((open >= 0 || before[i] === '|') && !(open >= 0 && lookaround(before, open))) {
          ok = insertionEnds(j).some((k) => walk(i, k, true));
        }
      }
      if (!ok && i < before.length && before[i] === after[j]) ok = walk(i + 1, j + 1, grew);
    }
    seen.set(key, ok);
    return ok;
  };
  return walk(0, 0, false);
}

/** A request field's `pattern` that only gained alternatives (patternOnlyGrew): every value sent before still passes. */
function widensRequestPattern(path: string, method: string, segments: string[] | undefined): boolean {
  if (!segments || (segments[0] !== 'requestBody' && segments[0] !== 'parameters') || segments.at(-1) !== 'pattern') return false;
  const base = ['paths', path, method, ...rejoin(segments.slice(0, -1))];
  const old = resolvePath(pristine.before, base)?.pattern;
  const now = resolvePath(pristine.after, base)?.pattern;
  return typeof old === 'string' && typeof now === 'string' && patternOnlyGrew(old, now);
}

for (const [key, changes] of byOperation) {
  const [method, path] = key.split(' ') as [string, string];
  if (!path) continue;
  for (const c of changes) {
    const widened = widenedResponse(path, method.toLowerCase(), c.segments);
    if (c.type === 'breaking' && growsOpenSet(path, method.toLowerCase(), c.where)) {
      c.type = 'non-breaking';
      c.description += ' (an open set grew: x-extensible)';
    } else if (widened) {
      // Said in our words: api-smart-diff's, where a schema is used twice in an operation, can be "annotation (2)".
      c.type = 'breaking';
      c.description = `[Widened] ${widened}`;
    } else if (c.type === 'breaking' && widensRequestType(path, method.toLowerCase(), c.segments)) {
      c.type = 'non-breaking';
      c.description += ' (a request type widened: what clients send still passes)';
    } else if (c.type === 'breaking' && widensRequestPattern(path, method.toLowerCase(), c.segments)) {
      c.type = 'non-breaking';
      c.description += ' (a request pattern only gained alternatives: what clients send still passes)';
    } else if (c.type !== 'breaking' && widensResponseType(path, method.toLowerCase(), c.where)) {
      c.type = 'breaking';
      c.description += ' (a response type widened: clients meet values they were told never come)';
    }
  }
}

// One entry per change made in one place: a change the components made (see originOf) that reaches two
// or more operations is told once, with them; the rest under their operation, as before.
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/**
 * The component schema change an operation's change comes from: one of the same action and values whose
 * path ends the operation's path, the deepest such (a change to Status shows under Thing.properties.status
 * too). Undefined for a change made in the operation itself.
 */
function originOf(c: Change): string | undefined {
  if (!c.segments) return undefined;
  let found: (typeof componentChanges)[number] | undefined;
  for (const k of componentChanges) {
    if (k.action !== c.action || k.segments.length > c.segments.length || !same(k.before, c.before) || !same(k.after, c.after)) continue;
    const tail = c.segments.slice(c.segments.length - k.segments.length);
    if (!tail.every((s, i) => s === k.segments[i])) continue;
    if (!found || k.segments.length < found.segments.length) found = k;
  }
  return found?.origin;
}
/** A description without its operation's context (" in Response 200 content (application/json)"). */
const contextFree = (description: string) => description.replace(/ in (Response \d+|Request Body) content \([^)]*\)/g, '').replace(/ from `[^`]*`/, '');

/** A component change's field, named from its schema: components.schemas.Thing.properties.label.type is Thing.label. */
function fieldOf(origin: string): string {
  const [, , name, ...rest] = origin.split('.');
  return [name, ...rest.filter((_, i) => rest[i - 1] === 'properties')].join('.');
}

interface Entry {
  type: string;
  description: string;
  /** Where the change was made: a component schema for a shared change, else the operation's path. */
  where: string;
  operations: string[];
}
const shared = new Map<string, Entry>();
const sharedChanges = new Set<Change>();
{
  const candidates = new Map<string, { entry: Entry; changes: Change[] }>();
  for (const [key, changes] of byOperation) {
    for (const c of changes) {
      const origin = originOf(c);
      if (!origin) continue;
      const id = `${c.type}|${origin}`;
      const found = candidates.get(id) ?? { entry: { type: c.type, description: contextFree(c.description).replace(/^\[Widened\] `[^`]*`/, `[Widened] \`${fieldOf(origin)}\``), where: origin, operations: [] }, changes: [] };
      if (!found.entry.operations.includes(key)) found.entry.operations.push(key);
      found.changes.push(c);
      candidates.set(id, found);
    }
  }
  for (const [id, { entry, changes }] of candidates) {
    if (entry.operations.length < 2) continue;
    shared.set(id, entry);
    for (const c of changes) sharedChanges.add(c);
  }
}

function order(type: string): number {
  return ['breaking', 'deprecated', 'non-breaking', 'annotation', 'unclassified'].indexOf(type);
}
const isV1 = (key: string) => (key.split(' ')[1] ?? '').startsWith('/v1');
const intendedFor = (key: string) => {
  const [method, path] = key.split(' ') as [string, string];
  return path ? intended(path, method.toLowerCase()) : undefined;
};

// What is told: the shared entries, then each operation's own changes. Counts are of entries.
const sharedEntries = [...shared.values()].sort((a, b) => order(a.type) - order(b.type) || a.where.localeCompare(b.where));
const own = [...byOperation]
  .map(([key, changes]) => ({ key, why: intendedFor(key), changes: changes.filter((c) => !sharedChanges.has(c)).sort((a, b) => order(a.type) - order(b.type)) }))
  .filter((o) => o.changes.length > 0)
  .sort((a, b) => a.key.localeCompare(b.key));
const entryTypes = [...sharedEntries.map((e) => e.type), ...own.flatMap((o) => o.changes.map((c) => c.type))];
const counts = (type: string) => entryTypes.filter((t) => t === type).length;
// An entry breaks unannounced when it breaks a /v1 operation whose sunset has not come.
const unannounced =
  sharedEntries.filter((e) => e.type === 'breaking' && e.operations.some((key) => isV1(key) && !intendedFor(key))).length +
  own.reduce((n, o) => n + (isV1(o.key) && !o.why ? o.changes.filter((c) => c.type === 'breaking').length : 0), 0);
const summary = `${byOperation.size} operations changed, ${entryTypes.length} ${entryTypes.length === 1 ? 'entry' : 'entries'}: ${counts('breaking')} breaking, ${counts('deprecated')} deprecated, ${counts('non-breaking')} non-breaking, ${counts('annotation')} annotation`;
const asyncNote =
  baseRef && tryGit('diff', '--stat', baseRef, '--', 'openapi/events.asyncapi.yaml')
    ? 'openapi/events.asyncapi.yaml changed too (not classified: api-smart-diff reads AsyncAPI 2 only; its payloads are chat.yaml schemas, classified above)'
    : undefined;
if (unannounced > 0) problems.push(`${unannounced} breaking change(s) under /v1 not announced: deprecate first (deprecated: true, x-deprecated-at, x-sunset six months ahead), break after the sunset`);

const lines: string[] = [];
if (format === 'text') {
  lines.push(`contract changes: ${label}`);
  if (sharedEntries.length > 0) {
    lines.push('', 'shared changes (made once, reaching several operations):');
    for (const e of sharedEntries) {
      lines.push(`  ${e.type.padEnd(12)} ${e.description}  at ${e.where}`);
      lines.push(`  ${''.padEnd(12)} in ${e.operations.length} operations: ${[...e.operations].sort().join(', ')}`);
    }
  }
  for (const o of own) {
    lines.push('', o.key + (o.why ? `  [intended: ${o.why}]` : ''));
    // The path too: api-smart-diff's wording is vague where a $ref was followed ("annotation (expires_in)").
    for (const c of o.changes) lines.push(`  ${c.type.padEnd(12)} ${c.description}${c.where ? `  at ${c.where}` : ''}`);
  }
  if (byOperation.size === 0) lines.push('', 'no change to any operation');
  lines.push('', summary);
  if (asyncNote) lines.push(asyncNote);
  for (const p of problems) lines.push(`FAIL ${p}`);
} else {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;
  const operation = (key: string) => {
    const [method, path, id] = key.split(' ');
    return `${code(`${method} ${path}`)}${id ? ` ${id}` : ''}`;
  };
  lines.push('### Contract changes', '', cell(label), '', `**${summary}**`);
  if (problems.length > 0) lines.push('', '> [!CAUTION]', ...problems.map((p) => `> ${p}`));
  if (sharedEntries.length > 0) {
    lines.push('', '#### Shared changes', '', 'Made once in a shared schema; each reaches several operations.', '', '| | Change | Made at | Operations |', '|---|---|---|---|');
    for (const e of sharedEntries) lines.push(`| **${e.type}** | ${cell(e.description)} | ${code(e.where)} | ${e.operations.length}: ${[...e.operations].sort().map(operation).join('<br>')} |`);
  }
  if (own.length > 0) {
    lines.push('', '#### By operation');
    for (const o of own) {
      lines.push('', `${operation(o.key)}${o.why ? ` _(intended: ${cell(o.why)})_` : ''}`, '', '| | Change | At |', '|---|---|---|');
      for (const c of o.changes) lines.push(`| **${c.type}** | ${cell(c.description)} | ${c.where ? code(c.where) : ''} |`);
    }
  }
  if (byOperation.size === 0) lines.push('', 'No change to any operation.');
  if (asyncNote) lines.push('', `_${asyncNote}_`);
}
console.log(lines.join('\n'));
process.exitCode = problems.length > 0 ? 1 : 0;
