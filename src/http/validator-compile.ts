import { requireFromValidator } from './validator-internals.ts';

// express-openapi-validator 5.6 compiles a route's validators at its first request, each (the request's
// parameters, its body, every response code) as a schema that carries the whole contract beside it, its
// `paths` included, so that `$ref`s resolve. Ajv walks every key of such a schema before compiling it, so
// each compile walked every path of the contract, and a route's first request paid for it.
// No `$ref` of the contract points into `paths` (test/integration/contract.test.ts holds it), so the compiles are given
// the contract without them: the same validators, compiled faster. Remove this when the validator
// stops embedding the paths.

type Doc = { paths?: unknown } & Record<string, unknown>;
const PATCHED = Symbol.for('customer-chat.validator-compile');

const middlewares = requireFromValidator('./middlewares/index.js') as {
  RequestValidator: { prototype: { buildMiddleware: (...args: unknown[]) => unknown; apiDoc: Doc } & { [PATCHED]?: true } };
  ResponseValidator: { prototype: { buildValidators: (...args: unknown[]) => unknown; spec: Doc } & { [PATCHED]?: true } };
};

const withoutPaths = new WeakMap<Doc, Doc>();
const pathless = (doc: Doc): Doc => {
  let view = withoutPaths.get(doc);
  if (!view) {
    view = { ...doc, paths: {} };
    withoutPaths.set(doc, view);
  }
  return view;
};

/** Runs `build` with `holder[key]` replaced by its view without paths (the builders read the document there). */
function compiledWithoutPaths<H extends Record<K, Doc>, K extends string>(holder: H, key: K, build: () => unknown): unknown {
  const doc = holder[key];
  holder[key] = pathless(doc) as H[K];
  try {
    return build();
  } finally {
    holder[key] = doc;
  }
}

export function compileValidatorsWithoutPaths(): void {
  const request = middlewares.RequestValidator.prototype;
  if (!request[PATCHED]) {
    const buildMiddleware = request.buildMiddleware;
    request.buildMiddleware = function (this: typeof request, ...args: unknown[]) {
      return compiledWithoutPaths(this, 'apiDoc', () => buildMiddleware.apply(this, args));
    };
    request[PATCHED] = true;
  }
  const response = middlewares.ResponseValidator.prototype;
  if (!response[PATCHED]) {
    const buildValidators = response.buildValidators;
    response.buildValidators = function (this: typeof response, ...args: unknown[]) {
      return compiledWithoutPaths(this, 'spec', () => buildValidators.apply(this, args));
    };
    response[PATCHED] = true;
  }
}

/** For the test: the validator's middlewares module, as patched. */
export const validatorMiddlewares = () => middlewares as unknown as { ResponseValidator: new (spec: unknown, options: unknown, eovOptions: unknown, serial: number) => unknown };
