import type { RequestHandler } from 'express';
import { AppError } from '../shared/errors.ts';
import { type Contract, operationKeyOf, requestOperationKey } from './contract.ts';

// Input that JSON Schema lets through but nothing behind it can hold. It runs for every operation,
// before the contract's own validation, so no handler (and no database) ever sees it:
// - NUL characters: PostgreSQL text and jsonb cannot store them;
// - lone UTF-16 surrogates: not Unicode text; UTF-8 cannot carry them and jsonb refuses their escapes;
// - non-finite numbers: `1e309` in a JSON body parses to Infinity, which JSON cannot even write back;
// - numeric parameters (query, path, header) written other than as plain decimals. Ajv's coercion
//   turns "Infinity" and "1e309" into Infinity and then, with strictNumbers, skips minimum and maximum
//   for them (so limit=Infinity passed a maximum of 100); it also reads " " as 0 and "0x10" as 16;
// - bodies nested deeper than anyone writes them, which recursive code further on would choke on;
// - arrays longer than their schema's maxItems (or than MAX_ARRAY_ITEMS anywhere): the validator, which
//   reports every error, checks each item of an array it will refuse anyway: ten thousand workflow
//   actions held the event loop for seconds and answered megabytes of findings.

export const MAX_BODY_DEPTH = 32;
/** No array of any request is longer (the contract's largest maxItems is 500): past it, refused unread. */
export const MAX_ARRAY_ITEMS = 1000;
const MAX_FINDINGS = 20;

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

type Finding = { path: string; message: string };

interface ParameterObject {
  $ref?: string;
  name: string;
  in: string;
  schema?: SchemaObject;
}

interface SchemaObject {
  $ref?: string;
  type?: string | string[];
  items?: SchemaObject;
  properties?: Record<string, SchemaObject>;
  maxItems?: number;
}

/** Where a request body's arrays are bounded: each array's maxItems, found through properties and items. */
interface ArrayBounds {
  maxItems?: number;
  items?: ArrayBounds;
  properties?: Map<string, ArrayBounds>;
}

export function inputGuard(contract: Contract): RequestHandler {
  const numericParameters = numericParametersByRoute(contract);
  const arrayBounds = arrayBoundsByRoute(contract);

  return (req, _res, next) => {
    const findings: Finding[] = [];
    const operation = requestOperationKey(req);
    textOf(req.params, '/path', findings);
    textOf(req.query, '/query', findings);
    if (req.body !== undefined) {
      const bounds = arrayBounds.get(operation);
      if (bounds) checkArrays(req.body, bounds, '/body', findings);
      walkBody(req.body, findings);
    }

    for (const parameter of numericParameters.get(operation) ?? []) {
      const value =
        parameter.in === 'query'
          ? (req.query as Record<string, unknown>)[parameter.name]
          : parameter.in === 'path'
            ? req.params[parameter.name]
            : parameter.in === 'header'
              ? req.get(parameter.name)
              : undefined;
      // Arrays (a repeated parameter) and objects are left to the schema, which refuses them.
      if (typeof value !== 'string') continue;
      if (!(parameter.kind === 'integer' ? INTEGER : NUMBER).test(value) || !Number.isFinite(Number(value))) {
        findings.push({
          path: parameter.pointer,
          message: `must be ${parameter.kind === 'integer' ? 'an integer' : 'a finite number'} written in decimal digits`,
        });
      }
    }

    if (findings.length > 0) {
      throw new AppError('ERR_VALIDATION', 'The request does not match the API contract', { fieldErrors: findings.slice(0, MAX_FINDINGS) });
    }
    next();
  };
}

function checkArrays(value: unknown, bounds: ArrayBounds, path: string, findings: Finding[]): void {
  if (Array.isArray(value)) {
    if (bounds.maxItems !== undefined && value.length > bounds.maxItems) {
      findings.push({ path, message: `must NOT have more than ${bounds.maxItems} items` });
      return;
    }
    if (bounds.items) for (let i = 0; i < value.length && findings.length < MAX_FINDINGS; i++) checkArrays(value[i], bounds.items, `${path}/${i}`, findings);
  } else if (bounds.properties && typeof value === 'object' && value !== null) {
    for (const [name, inner] of bounds.properties) {
      if (Object.hasOwn(value, name)) checkArrays((value as Record<string, unknown>)[name], inner, `${path}/${pointerSegment(name)}`, findings);
    }
  }
}

/** Follows a node's local $refs (at most ten hops) to what they name in the document. */
function resolverOf(document: Record<string, any>) {
  return <T extends { $ref?: string }>(node: T | undefined): T | undefined => {
    for (let hops = 0; node?.$ref && hops < 10; hops++) {
      node = node.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce<any>((at, key) => at?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);
    }
    return node;
  };
}

// "post /api/v1/workflows" -> the bounds of its JSON body's arrays, where it has any. Schemas under
// oneOf, anyOf or allOf are not followed (which branch applies is the validator's to say): MAX_ARRAY_ITEMS
// still bounds their arrays.
function arrayBoundsByRoute(contract: Contract): Map<string, ArrayBounds> {
  const document = contract.document;
  const resolve = resolverOf(document);
  const boundsOf = (schema: SchemaObject | undefined, depth: number): ArrayBounds | undefined => {
    const resolved = resolve(schema);
    if (!resolved || depth > 8) return undefined;
    const bounds: ArrayBounds = {};
    if (resolved.maxItems !== undefined) bounds.maxItems = resolved.maxItems;
    const items = boundsOf(resolved.items, depth + 1);
    if (items) bounds.items = items;
    for (const [name, property] of Object.entries(resolved.properties ?? {})) {
      const inner = boundsOf(property, depth + 1);
      if (inner) (bounds.properties ??= new Map()).set(name, inner);
    }
    return bounds.maxItems !== undefined || bounds.items || bounds.properties ? bounds : undefined;
  };
  const byRoute = new Map<string, ArrayBounds>();
  for (const op of contract.operations) {
    const body = resolve(document.paths[op.path][op.method].requestBody) as { content?: Record<string, { schema?: SchemaObject }> } | undefined;
    const bounds = boundsOf(body?.content?.['application/json']?.schema, 0);
    if (bounds) byRoute.set(operationKeyOf(contract, op), bounds);
  }
  return byRoute;
}

interface NumericParameter {
  name: string;
  in: string;
  kind: 'integer' | 'number';
  /** Where the finding points: /query/limit, /path/n, /headers/x-count */
  pointer: string;
}

// "get /api/v1/departments" -> its integer and number parameters (the path item's and the operation's).
function numericParametersByRoute(contract: Contract): Map<string, NumericParameter[]> {
  const document = contract.document;
  const resolve = resolverOf(document);
  const byRoute = new Map<string, NumericParameter[]>();
  for (const op of contract.operations) {
    const item = document.paths[op.path];
    const declared = [...(item.parameters ?? []), ...(item[op.method].parameters ?? [])] as ParameterObject[];
    const numeric: NumericParameter[] = [];
    for (const raw of declared) {
      const parameter = resolve(raw);
      const kind = parameter && numericKind(resolve(parameter.schema));
      if (!parameter || !kind) continue;
      const location = parameter.in === 'header' ? 'headers' : parameter.in;
      const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name;
      numeric.push({ name: parameter.name, in: parameter.in, kind, pointer: `/${location}/${pointerSegment(name)}` });
    }
    if (numeric.length > 0) byRoute.set(operationKeyOf(contract, op), numeric);
  }
  return byRoute;
}

function numericKind(schema: SchemaObject | undefined): 'integer' | 'number' | undefined {
  const types = [schema?.type ?? []].flat();
  if (types.includes('integer')) return 'integer';
  if (types.includes('number')) return 'number';
  return undefined;
}

const textProblem = (text: string): string | undefined =>
  text.includes('\u0000') ? 'must not contain NUL characters' : !text.isWellFormed() ? 'must be valid Unicode text (no lone surrogates)' : undefined;

// Query and path values: strings, or (qs) arrays and objects of them.
function textOf(values: unknown, base: string, findings: Finding[]): void {
  if (typeof values !== 'object' || values === null) return;
  walk(values, base, findings, Number.POSITIVE_INFINITY);
}

function walkBody(body: unknown, findings: Finding[]): void {
  walk(body, '/body', findings, MAX_BODY_DEPTH);
}

// Iterative, so a body nested a hundred thousand levels deep costs a loop, not the stack.
function walk(root: unknown, base: string, findings: Finding[], maxDepth: number): void {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: base, depth: 0 }];
  while (stack.length > 0 && findings.length < MAX_FINDINGS) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) findings.push({ path, message: problem });
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) findings.push({ path, message: 'must be a finite number' });
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= maxDepth) {
        findings.push({ path, message: `must not be nested more than ${maxDepth} levels deep` });
        continue;
      }
      if (Array.isArray(value) && value.length > MAX_ARRAY_ITEMS) {
        // Not twice for one array that its schema's own bound refused already (checkArrays).
        if (!findings.some((f) => f.path === path)) findings.push({ path, message: `must NOT have more than ${MAX_ARRAY_ITEMS} items` });
        continue;
      }
      const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const childPath = `${path}/${pointerSegment(key)}`;
        const keyProblem = Array.isArray(value) ? undefined : textProblem(key);
        if (keyProblem) findings.push({ path: childPath, message: `its name ${keyProblem}` });
        stack.push({ value: child, path: childPath, depth: depth + 1 });
      }
    }
  }
}

// A JSON pointer segment, cut short so that a megabyte-long key is not echoed back whole.
function pointerSegment(key: string): string {
  const segment = key.replaceAll('~', '~0').replaceAll('/', '~1');
  return segment.length > 64 ? `${segment.slice(0, 64)}…` : segment;
}
