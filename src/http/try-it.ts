// The reference's try-it panel (src/http/try-it-panel.js), server side: the table of operations the panel
// reads, made from the served REST document, and the panel's script as served. Redoc's free edition has
// no try-it; the panel is ours, dependency-free, and calls only the service that serves the page
// (relative URLs under the contract's base path), with a token its own login form obtained.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { operationsOf } from './code-samples.ts';

type Doc = Record<string, any>;

export interface TryItParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  /** The contract's example, shown as a placeholder, and prefilled when the parameter is required. */
  example?: string;
  description?: string;
}

export interface TryItOperation {
  /** The operation's page, lower-case, as the reference links it (`/api/docs/auth/register`). */
  link: string;
  method: string;
  path: string;
  /** The credential the panel sends: the login's access token, a visitor token, or none. */
  auth: 'bearer' | 'visitor' | 'none';
  parameters: TryItParameter[];
  /** A JSON body prefilled from the operation's example, or a form's fields. */
  body?: { type: 'json'; example: string; required: boolean } | { type: 'multipart'; fields: { name: string; file: boolean; required: boolean; example?: string }[] };
  /** The answer is a file, not JSON. */
  binary: boolean;
}

const deref = (document: Doc, node: Doc | undefined): Doc => {
  let at: any = node ?? {};
  for (let i = 0; i < 10 && typeof at?.$ref === 'string'; i++) {
    at = (at.$ref as string).slice(2).split('/').reduce<any>((o, k) => o?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], document);
  }
  return at ?? {};
};

/** Headers the browser sets itself or the panel sends from its own fields: not offered as parameters. */
const OWN_HEADERS = new Set(['origin', 'authorization', 'content-type', 'accept-encoding', 'content-length', 'cookie', 'host']);

const text = (value: unknown): string | undefined => (value === undefined || value === null ? undefined : typeof value === 'string' ? value : JSON.stringify(value));

function bodyExample(document: Doc, media: Doc): unknown {
  if (media.example !== undefined) return media.example;
  const first = Object.values<Doc>(media.examples ?? {})[0];
  if (first) return deref(document, first).value;
  return deref(document, media.schema).example;
}

/**
 * The panel's table: one row per operation of `document` that has a page among `links` (the reference's
 * page paths; an operation's page ends in its operationId, lower-case, under its tag's).
 */
export function tryItOperations(document: Doc, links: Iterable<string>): TryItOperation[] {
  const byOperationId = new Map<string, string>();
  for (const link of links) {
    const last = link.split('/').pop();
    if (last) byOperationId.set(last.toLowerCase(), link.toLowerCase());
  }
  const out: TryItOperation[] = [];
  for (const ref of operationsOf(document)) {
    const { operation, method, path } = ref;
    const link = byOperationId.get(String(operation.operationId).toLowerCase());
    if (!link) continue;
    const security: Doc[] = operation.security ?? document.security ?? [];
    const schemes = security.flatMap((s) => Object.keys(s));
    const auth = schemes.includes('bearerAuth') ? 'bearer' : schemes.includes('visitorAuth') ? 'visitor' : 'none';
    const parameters = [...ref.pathParameters, ...(operation.parameters ?? [])]
      .map((p) => deref(document, p))
      .filter((p) => ['path', 'query', 'header'].includes(p.in) && !(p.in === 'header' && OWN_HEADERS.has(String(p.name).toLowerCase())))
      .map((p): TryItParameter => {
        const example = text(p.example ?? p.schema?.example ?? Object.values<Doc>(p.examples ?? {})[0]?.value);
        const description = typeof p.description === 'string' ? p.description.split('\n')[0] : undefined;
        return { name: p.name, in: p.in, required: p.in === 'path' || p.required === true, ...(example !== undefined ? { example } : {}), ...(description ? { description } : {}) };
      });
    const success = Object.entries<Doc>(operation.responses ?? {}).find(([status]) => /^2/.test(status))?.[1];
    const answerTypes = Object.keys(deref(document, success).content ?? {});
    const row: TryItOperation = { link, method: method.toUpperCase(), path, auth, parameters, binary: answerTypes.length > 0 && !answerTypes.some((t) => t.includes('json')) };
    const requestBody = deref(document, operation.requestBody);
    const content: Doc = requestBody.content ?? {};
    if (content['application/json']) {
      const example = bodyExample(document, content['application/json']);
      row.body = { type: 'json', example: example === undefined ? '{}' : JSON.stringify(example, null, 2), required: requestBody.required === true };
    } else if (content['multipart/form-data']) {
      const media = content['multipart/form-data'];
      const schema = deref(document, media.schema);
      const example = (bodyExample(document, media) ?? {}) as Record<string, unknown>;
      row.body = {
        type: 'multipart',
        fields: Object.entries<Doc>(schema.properties ?? {}).map(([name, property]) => {
          const p = deref(document, property);
          const value = text(example[name]);
          return { name, file: p.format === 'binary' || p.contentMediaType !== undefined, required: (schema.required ?? []).includes(name), ...(value !== undefined ? { example: value } : {}) };
        }),
      };
    }
    out.push(row);
  }
  return out;
}

const PANEL = new URL('./try-it-panel.js', import.meta.url);

/** The panel's script as served, and a name for it that changes with its content (it is cached for good). */
export function tryItPanel(): { source: string; file: string } {
  const source = readFileSync(PANEL, 'utf8');
  return { source, file: `try-it-${createHash('sha256').update(source).digest('hex').slice(0, 12)}.js` };
}
