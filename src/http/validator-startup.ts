import { requireFromValidator } from './validator-internals.ts';

// express-openapi-validator 5.6 prepares the contract before its first request (any request: /api/health
// waits for it), and most of a restart's time on the embedded default went there, in three pieces of work
// whose results nothing reads here:
// - it bundles the document with json-schema-ref-parser. The contract is generated bundled (every $ref is
//   local) and bundling it changes nothing (test/integration/validator-startup.test.ts holds it): a
//   document whose every $ref is local is taken as it is.
// - it builds a validator of the OpenAPI schema itself even when it is told not to check the document
//   against it (validateApiSpec: false): not built then.
// - its preprocessor compiles each schema a $ref names only to read that schema back from the compiled
//   validator: it reads it from Ajv's registry, the same object, uncompiled. The validators that
//   discriminated unions at a request body's root use (none in the contract: the test holds that too) are
//   compiled at their first use instead of at start.
// Every request and response is validated as before, by validators compiled at a route's first request.
// Remove a piece when the validator stops doing it.

type Ajv = {
  opts: { schemaId?: string };
  schemas: Record<string, unknown>;
  refs: Record<string, unknown>;
  compile: (schema: object) => Validate;
};
type Validate = ((data: unknown) => boolean) & { errors?: unknown };
type SchemaEnv = { schema: unknown };
type Preprocessor = {
  ajv: Ajv;
  apiDoc: Record<string, unknown>;
  resolvedSchemaCache: Map<string, unknown>;
};

const PATCHED = Symbol.for('customer-chat.validator-startup');

const framework = requireFromValidator('./framework/index.js') as {
  OpenAPIFramework: { prototype: { loadSpec: (doc: unknown, $refParser?: { mode?: string }) => unknown } & { [PATCHED]?: true } };
};
const schemaValidator = requireFromValidator('./framework/openapi.schema.validator.js') as {
  OpenAPISchemaValidator: (new (opts: { version: string; validateApiSpec: boolean }) => { validate(doc: unknown): { errors: unknown[] } }) & { [PATCHED]?: true };
};
const preprocessor = requireFromValidator('./middlewares/parsers/schema.preprocessor.js') as {
  SchemaPreprocessor: {
    prototype: {
      resolveSchema: (this: Preprocessor, schema: unknown) => unknown;
      processDiscriminator: (this: Preprocessor, ...args: unknown[]) => unknown;
    } & { [PATCHED]?: true };
  };
};
// The Ajv the validator itself loads (its compile/ and compile/resolve modules: getSchema's own steps).
const requireAjv = (path: string) => requireFromValidator(requireFromValidator.resolve(`ajv/dist/${path}`));
const ajvCompile = requireAjv('compile/index.js') as {
  SchemaEnv: new (env: { schema: object; schemaId?: string }) => SchemaEnv;
  resolveSchema: (this: Ajv, root: SchemaEnv, ref: string) => SchemaEnv | undefined;
};
const { normalizeId } = requireAjv('compile/resolve.js') as { normalizeId: (id: string) => string };
const get = requireFromValidator('lodash.get') as (object: unknown, path: string) => unknown;

/** What `ajv.getSchema(ref)?.schema` answers, without compiling the schema (Ajv 8's getSchema, less its last step). */
export function registeredSchema(ajv: Ajv, ref: string): unknown {
  let key = ref;
  let env: unknown;
  while (typeof (env = ajv.schemas[normalizeId(key)] ?? ajv.refs[normalizeId(key)]) === 'string') key = env as string;
  if (env === undefined) {
    const root = new ajvCompile.SchemaEnv({ schema: {}, schemaId: ajv.opts.schemaId });
    env = ajvCompile.resolveSchema.call(ajv, root, key);
    if (!env) return undefined;
    ajv.refs[key] = env;
  }
  return (env as SchemaEnv).schema;
}

/** The preprocessor's resolveSchema (5.6.2), with registeredSchema in the place of getSchema. */
function resolveSchema(this: Preprocessor, schema: unknown): unknown {
  if (!schema) return null;
  const ref = (schema as { $ref?: string }).$ref;
  if (ref && this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
  let res = ref ? registeredSchema(this.ajv, ref) : schema;
  if (ref && !res) {
    const path = ref.split('/').join('.');
    res = get(this.apiDoc, path.substring(path.indexOf('.') + 1));
  }
  if (ref) this.resolvedSchemaCache.set(ref, res);
  return res;
}

/** Whether every $ref of the document points into the document itself (`#...`): nothing to bundle in. */
const onlyLocalRefs = (doc: object): boolean => !/"\$ref":"(?!#)/.test(JSON.stringify(doc));

/** A validator compiled at its first call: what it answers and its errors are the compiled one's. */
function compiledAtFirstUse(compile: () => Validate): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null;
  return validate;
}

/** For the test: the preprocessor's own methods, and its class. */
export const unpatchedPreprocessor = {
  resolveSchema: preprocessor.SchemaPreprocessor.prototype.resolveSchema,
  processDiscriminator: preprocessor.SchemaPreprocessor.prototype.processDiscriminator,
};
export const preprocessorClass = () => preprocessor.SchemaPreprocessor;

export function prepareContractLazily(): void {
  const load = framework.OpenAPIFramework.prototype;
  if (!load[PATCHED]) {
    const loadSpec = load.loadSpec;
    load.loadSpec = function (this: unknown, doc: unknown, $refParser?: { mode?: string }) {
      if (typeof doc === 'object' && doc !== null && ($refParser?.mode ?? 'bundle') === 'bundle' && onlyLocalRefs(doc)) return Promise.resolve(doc);
      return loadSpec.call(this, doc, $refParser);
    };
    load[PATCHED] = true;
  }
  if (!schemaValidator.OpenAPISchemaValidator[PATCHED]) {
    const Original = schemaValidator.OpenAPISchemaValidator;
    const notBuilt = {
      validate(): never {
        throw new Error('the OpenAPI schema validator was not built: validateApiSpec is false');
      },
    };
    // Called with `new`: the object returned is what `new` gives.
    const Replacement = function (opts: { version: string; validateApiSpec: boolean }) {
      return opts.validateApiSpec ? new Original(opts) : notBuilt;
    } as unknown as typeof Original;
    Replacement[PATCHED] = true;
    schemaValidator.OpenAPISchemaValidator = Replacement;
  }
  const pre = preprocessor.SchemaPreprocessor.prototype;
  if (!pre[PATCHED]) {
    pre.resolveSchema = resolveSchema;
    const processDiscriminator = pre.processDiscriminator;
    pre.processDiscriminator = function (this: Preprocessor, ...args: unknown[]) {
      const ajv = this.ajv;
      const compile = ajv.compile;
      const own = Object.hasOwn(ajv, 'compile');
      ajv.compile = (schema) => compiledAtFirstUse(() => compile.call(ajv, schema));
      try {
        return processDiscriminator.apply(this, args);
      } finally {
        if (own) ajv.compile = compile;
        else delete (ajv as Partial<Ajv>).compile;
      }
    };
    pre[PATCHED] = true;
  }
}
