import { isDeepStrictEqual } from 'node:util';
import { expect } from 'chai';
import { Server } from 'node:net';
import { prepareValidator, warmValidator } from '../../src/app.ts';
import { loadContract } from '../../src/http/contract.ts';
import { requireFromValidator } from '../../src/http/validator-internals.ts';
import { prepareContractLazily, preprocessorClass, unpatchedPreprocessor } from '../../src/http/validator-startup.ts';

// src/http/validator-startup.ts skips work of the validator's start whose results nothing reads. These hold
// what that rests on, for the contract as it is: bundling it changes nothing, the preprocessor prepares the
// same documents with and without the patch, and no request body is a discriminated union at its root.

type Doc = Record<string, any>;
type Preprocessed = { apiDoc: Doc; apiDocRes: Doc | null };

// The validator's options as src/app.ts gives them.
function validatorOptions(apiSpec: Doc) {
  const { OpenApiValidator } = requireFromValidator('./openapi.validator.js') as {
    OpenApiValidator: new (options: object) => { ajvOpts: { preprocessor: object }; options: { validateResponses: object } };
  };
  const oav = new OpenApiValidator({
    apiSpec,
    validateApiSpec: false,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: { removeAdditional: false },
    validateSecurity: false,
    validateFormats: true,
    fileUploader: false,
  });
  return { ajvOptions: oav.ajvOpts.preprocessor, responses: oav.options.validateResponses };
}

function preprocess(doc: Doc, patched: boolean): Preprocessed {
  prepareContractLazily();
  const Preprocessor = preprocessorClass() as unknown as new (doc: Doc, ajvOptions: object, responses: object) => { preProcess(): Preprocessed };
  const proto = Preprocessor.prototype as unknown as typeof unpatchedPreprocessor;
  const patchedMethods = { resolveSchema: proto.resolveSchema, processDiscriminator: proto.processDiscriminator };
  if (!patched) Object.assign(proto, unpatchedPreprocessor);
  try {
    const { ajvOptions, responses } = validatorOptions(doc);
    return new Preprocessor(doc, ajvOptions, responses).preProcess();
  } finally {
    Object.assign(proto, patchedMethods);
  }
}

/** Every object of the document that carries the preprocessor's (non-enumerable) discriminator record. */
function discriminators(doc: unknown): { options: unknown; property: unknown; validators: string[] }[] {
  const found: { options: unknown; property: unknown; validators: string[] }[] = [];
  const seen = new Set<unknown>();
  const walk = (value: unknown) => {
    if (!value || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    const record = Object.getOwnPropertyDescriptor(value, '_discriminator')?.value as { options: unknown; property: unknown; validators: object } | undefined;
    if (record) found.push({ options: record.options, property: record.property, validators: Object.keys(record.validators).sort() });
    for (const child of Object.values(value)) walk(child);
  };
  walk(doc);
  return found;
}

describe('the validator start-up shortcuts (src/http/validator-startup.ts)', () => {
  const contract = loadContract();

  it('bundling the contract changes nothing: it is taken as it is', async () => {
    const $RefParser = requireFromValidator('@apidevtools/json-schema-ref-parser') as { bundle: (doc: Doc) => Promise<Doc> };
    const bundled = await $RefParser.bundle(structuredClone(contract.document));
    expect(isDeepStrictEqual(bundled, contract.document), 'bundling changed the contract: remove the loadSpec shortcut').to.equal(true);
  });

  it('the preprocessor prepares the same request and response documents without compiling the schemas it resolves', () => {
    const plain = preprocess(structuredClone(contract.document), false);
    const fast = preprocess(structuredClone(contract.document), true);
    expect(isDeepStrictEqual(fast.apiDoc, plain.apiDoc), 'request documents differ').to.equal(true);
    expect(isDeepStrictEqual(fast.apiDocRes, plain.apiDocRes), 'response documents differ').to.equal(true);
    expect(discriminators(fast.apiDoc)).to.deep.equal(discriminators(plain.apiDoc));
    expect(discriminators(plain.apiDoc)).to.not.be.empty;
  });

  it('no request body is a discriminated union at its root (their validators are compiled at first use)', () => {
    const { apiDoc } = preprocess(structuredClone(contract.document), true);
    const roots: string[] = [];
    for (const [path, item] of Object.entries<Doc>(apiDoc.paths)) {
      for (const [method, op] of Object.entries<Doc>(item)) {
        for (const media of Object.values<Doc>(op?.requestBody?.content ?? {})) {
          if (media.schema && Object.getOwnPropertyDescriptor(media.schema, '_discriminator')) roots.push(`${method} ${path}`);
        }
      }
    }
    expect(roots).to.deep.equal([]);
  });

  it('a discriminated union at a body root validates as before, its validators compiled at first use', () => {
    const doc = (): Doc => ({
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      paths: {
        '/pets': {
          post: {
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } },
            responses: { '204': { description: 'ok' } },
          },
        },
      },
      components: {
        schemas: {
          Pet: { oneOf: [{ $ref: '#/components/schemas/Cat' }, { $ref: '#/components/schemas/Dog' }], discriminator: { propertyName: 'kind' } },
          Cat: { type: 'object', required: ['kind', 'lives'], properties: { kind: { type: 'string' }, lives: { type: 'integer' } } },
          Dog: { type: 'object', required: ['kind', 'bark'], properties: { kind: { type: 'string' }, bark: { type: 'boolean' } } },
        },
      },
    });
    type Validate = ((body: unknown) => boolean) & { errors?: unknown };
    const validatorsOf = (patched: boolean) => {
      const { apiDoc } = preprocess(doc(), patched);
      return (Object.getOwnPropertyDescriptor(apiDoc.components.schemas.Pet, '_discriminator')!.value as { validators: Record<string, Validate> }).validators;
    };
    const plain = validatorsOf(false);
    const fast = validatorsOf(true);
    expect(Object.keys(fast)).to.deep.equal(Object.keys(plain));
    const bodies = [{ kind: 'Cat', lives: 9 }, { kind: 'Cat' }, { kind: 'Dog', bark: true }, { kind: 'Dog', bark: 'yes', lives: 1 }, {}, 'cat'];
    for (const option of Object.keys(plain)) {
      for (const body of bodies) {
        const expected = [plain[option]!(body), plain[option]!.errors];
        expect([fast[option]!(body), fast[option]!.errors], `${option} ${JSON.stringify(body)}`).to.deep.equal(expected);
      }
    }
  });

  it("the warm-up makes the validator's request and response validators before any request of the service's, once", async () => {
    type Made = { new (...args: any[]): object };
    const requests = requireFromValidator('./middlewares/openapi.request.validator.js') as { RequestValidator: Made };
    const responses = requireFromValidator('./middlewares/openapi.response.validator.js') as { ResponseValidator: Made };
    const made = { request: 0, response: 0 };
    const [Request, Response] = [requests.RequestValidator, responses.ResponseValidator];
    requests.RequestValidator = class extends Request {
      constructor(...args: any[]) {
        super(...args);
        made.request++;
      }
    };
    responses.ResponseValidator = class extends Response {
      constructor(...args: any[]) {
        super(...args);
        made.response++;
      }
    };
    // And it takes no TCP port: one of the system's choosing could be the one just chosen for the service
    // (a free port asked for, then handed to it), and a health check there would be answered by the warm-up.
    const listened: unknown[] = [];
    const listen = Server.prototype.listen;
    Server.prototype.listen = function (this: Server, ...args: unknown[]) {
      listened.push(args[0]);
      return (listen as (...a: unknown[]) => Server).apply(this, args);
    } as typeof listen;
    try {
      const validator = prepareValidator(loadContract(), { validateResponses: true });
      expect(made, 'nothing is made before a request').to.deep.equal({ request: 0, response: 0 });
      await warmValidator(validator);
      expect(made, 'made by the warm-up').to.deep.equal({ request: 1, response: 1 });
      expect(listened).to.have.length(1);
      expect(listened[0], 'a Unix socket, not a port').to.be.a('string');
      await warmValidator(validator);
      expect(made, 'kept by the chain the app mounts: not made again').to.deep.equal({ request: 1, response: 1 });
    } finally {
      Server.prototype.listen = listen;
      requests.RequestValidator = Request;
      responses.ResponseValidator = Response;
    }
  });
});
