import { requireFromValidator } from './validator-internals.ts';

// express-openapi-validator 5.6 rewrites a request's parameters before validating them (form-exploded
// objects, delimited arrays, JSON in parameters, bracket notation) in RequestParameterMutator.modifyRequest,
// and refuses query values with unencoded reserved characters. It works it all out again at every request:
// it parses the URL twice and resolves each parameter of the operation (a visible share of a list page's
// CPU under npm run bench:probe). For operations whose parameters are all plain values in the path, query
// or headers, nothing of that changes a request whose query holds no reserved character and no bracketed
// key: such requests skip it. Whether an operation's parameters are plain is decided once, with the
// validator's own reading of them, after its first request went through the whole of it. Anything else
// still goes through the whole of it. test/integration/parameter-mutator.test.ts holds the two equal.

interface OperationRequest {
  openapi?: { schema?: { parameters?: unknown[] } };
  originalUrl: string;
  query: Record<string, unknown>;
}

interface Parameter {
  in: string;
  name: string;
  content?: unknown;
}

interface Mutator {
  ajv: unknown;
  _apiDocs: unknown;
  modifyRequest(req: OperationRequest): void;
  isObjectOrXOf(schema: unknown): boolean;
}

const PATCHED = Symbol.for('customer-chat.parameter-mutator');

const { RequestParameterMutator } = requireFromValidator('./middlewares/parsers/req.parameter.mutator.js') as {
  RequestParameterMutator: { prototype: Mutator & { [PATCHED]?: true } };
};
const { dereferenceParameter, normalizeParameter } = requireFromValidator('./middlewares/parsers/util.js') as {
  dereferenceParameter(apiDocs: unknown, parameter: unknown): Parameter;
  normalizeParameter(ajv: unknown, parameter: Parameter): { name: string; schema: { type?: unknown } };
};

/**
 * Any of the validator's reserved characters (`/[\:\/\?#\[\]@!\$&\'()\*\+,;=]/`) but the separators `&`
 * and `=`, which it splits the raw query on before looking: a query without these has no value it refuses.
 */
const RESERVED_IN_VALUES = /[:/?#[\]@!$'()*+,;]/;

/** Per operation (the validator's own object, the same at every request): whether its parameters are all plain. */
const plainOperations = new WeakMap<object, boolean>();

/** Requests that skipped the mutator, for the test that holds the fast path taken. */
let skipped = 0;
/** Off in the test that compares answers with and without the skip. */
let skipping = true;

function isPlain(mutator: Mutator, parameters: unknown[]): boolean {
  return parameters.every((p) => {
    const parameter = dereferenceParameter(mutator._apiDocs, p);
    if (parameter.content !== undefined) return false;
    if (!['path', 'query', 'header'].includes(parameter.in)) return false;
    // The validator splits such a query value on commas, and fails on a key without a value (`?s`).
    if (parameter.in === 'query' && (parameter as { explode?: boolean }).explode === false) return false;
    const { schema } = normalizeParameter(mutator.ajv, parameter);
    return schema.type !== 'array' && !mutator.isObjectOrXOf(schema);
  });
}

export function skipPlainParameterMutation(): void {
  const proto = RequestParameterMutator.prototype;
  if (proto[PATCHED]) return;
  const modifyRequest = proto.modifyRequest;
  proto.modifyRequest = function (this: Mutator, req: OperationRequest) {
    const operation = req.openapi?.schema;
    const plain = operation && plainOperations.get(operation);
    if (!operation || plain === undefined) {
      modifyRequest.call(this, req);
      // After the whole of it: it also fills in each parameter's default style and explode, once.
      if (operation) plainOperations.set(operation, isPlain(this, operation.parameters ?? []));
      return;
    }
    if (!plain || !skipping) return modifyRequest.call(this, req);
    const at = req.originalUrl.indexOf('?');
    if (at !== -1 && RESERVED_IN_VALUES.test(req.originalUrl.slice(at + 1))) return modifyRequest.call(this, req);
    // A bracket encoded in the URL is one in the decoded key, which the validator reads as nesting.
    for (const key in req.query) if (key.includes('[')) return modifyRequest.call(this, req);
    skipped++;
  };
  proto[PATCHED] = true;
}

/** For tests: how many requests skipped the mutator, and a switch for the skip. */
export const parameterMutationForTests = {
  skips: (): number => skipped,
  setSkipping: (on: boolean): void => {
    skipping = on;
  },
};
