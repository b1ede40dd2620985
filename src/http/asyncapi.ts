import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const ASYNCAPI_PATH = new URL('../../openapi/events.asyncapi.yaml', import.meta.url);

const CHAT_REF = /^\.\/chat\.yaml#\/components\/schemas\/([\w.-]+)$/;

/**
 * The AsyncAPI document with its references into the REST contract (`./chat.yaml#/components/schemas/X`)
 * brought in: each such schema, and every schema it reaches, is copied into the document's own
 * components.schemas, so the document stands alone where chat.yaml is not beside it (a browser, a download),
 * and is valid AsyncAPI (a parser refuses OpenAPI's discriminator object there).
 */
export function bundleAsyncApi(asyncapi: Record<string, any>, chat: Record<string, any>): Record<string, any> {
  const document = structuredClone(asyncapi);
  const own: Record<string, unknown> = (document.components ??= {}).schemas ??= {};
  const chatSchemas: Record<string, unknown> = chat.components?.schemas ?? {};
  const pending: string[] = [];
  const rewrite = (node: unknown, inChat: boolean): void => {
    if (Array.isArray(node)) return node.forEach((n) => rewrite(n, inChat));
    if (!node || typeof node !== 'object') return;
    const obj = node as Record<string, unknown>;
    if (typeof obj.$ref === 'string') {
      const name = CHAT_REF.exec(obj.$ref)?.[1] ?? (inChat ? /^#\/components\/schemas\/([\w.-]+)$/.exec(obj.$ref)?.[1] : undefined);
      if (name) {
        if (!(name in chatSchemas)) throw new Error(`the AsyncAPI document refers to ${obj.$ref}, which chat.yaml does not have`);
        obj.$ref = `#/components/schemas/${name}`;
        pending.push(name);
      }
    }
    // OpenAPI's discriminator is {propertyName, mapping}; an AsyncAPI schema's is the property's name.
    if (inChat && obj.discriminator && typeof obj.discriminator === 'object') obj.discriminator = (obj.discriminator as { propertyName: string }).propertyName;
    for (const value of Object.values(obj)) rewrite(value, inChat);
  };
  rewrite(document, false);
  const copied = new Set<string>();
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (copied.has(name)) continue;
    copied.add(name);
    if (name in (asyncapi.components?.schemas ?? {})) throw new Error(`schema ${name} is both the AsyncAPI document's and chat.yaml's: rename one`);
    const schema = structuredClone(chatSchemas[name]);
    rewrite(schema, true);
    own[name] = schema;
  }
  return document;
}

export function loadAsyncApi(chat: Record<string, any>): Record<string, any> {
  return bundleAsyncApi(parse(readFileSync(ASYNCAPI_PATH, 'utf8')) as Record<string, any>, chat);
}
