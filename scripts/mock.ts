// `npm run mock`: Prism on the contract, answering the paths the service answers (`/api/health`,
// `/api/v1/...`), so a frontend switches between mock and service by changing only its base URL.
// Prism matches request paths against the document's paths and ignores the servers' path, so it is
// given a copy of the contract whose paths carry the base path; the contract itself is not changed.
//
// Prism listens on a private loopback port behind a small proxy on the public one, which corrects the one
// answer Prism cannot be told to give: a request whose body breaks the schema gets the operation's 422
// from Prism whenever the operation declares one, where the service answers 400 ERR_VALIDATION. The
// proxy answers the operation's 400 example then (unless the client asked for `Prefer: code=422`), and
// in every 400 for a request Prism refused, Prism's findings as its `errors`, where the service says them.
// test/e2e/mock-agreement.test.ts keeps the mock and the service answering bad requests alike.
//   node scripts/mock.ts [--host 127.0.0.1] [--port 4010] [prism options...]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingHttpHeaders, type IncomingMessage, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { loadContract } from '../src/http/contract.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(name);
  if (at === -1) return fallback;
  const [, value] = args.splice(at, 2);
  return value ?? fallback;
};
const host = option('--host', '127.0.0.1');
const port = option('--port', '4010');

const { document, basePath } = loadContract();
const mockDocument = {
  ...document,
  servers: [{ url: `http://${host}:${port}` }],
  paths: Object.fromEntries(Object.entries(document.paths ?? {}).map(([path, item]) => [`${basePath}${path}`, item])),
};
const dir = mkdtempSync(join(tmpdir(), 'chat-mock-'));
const file = join(dir, 'chat.mock.yaml');
writeFileSync(file, stringify(mockDocument));

const resolve = (node: any): any => {
  for (let hops = 0; node?.$ref && hops < 10; hops++) node = node.$ref.replace(/^#\//, '').split('/').reduce((at: any, k: string) => at?.[k], document);
  return node;
};

/** Each operation's 400 example, by a matcher of its method and path; literal paths before templated ones. */
const badRequests = Object.entries<any>(document.paths ?? {})
  .flatMap(([path, item]) =>
    Object.entries<any>(item).flatMap(([method, op]) => {
      const media = resolve(op?.responses?.['400'])?.content?.['application/problem+json'];
      if (!media) return [];
      const example = 'example' in media ? media.example : resolve(Object.values<any>(media.examples ?? {})[0])?.value;
      const pattern = new RegExp(`^${basePath}${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      return [{ method: method.toUpperCase(), pattern, templated: path.includes('{'), example }];
    }),
  )
  .sort((a, b) => Number(a.templated) - Number(b.templated));

interface Violation {
  location: string[];
  severity: string;
  message: string;
}
/**
 * What Prism found wrong with a request it answered with its 422 or 400 (it says so in sl-violations), or
 * undefined when it did not refuse the request. Empty when the list was cut short ("Too many violations!").
 */
function refusedRequest(req: IncomingMessage, status: number | undefined, headers: IncomingHttpHeaders): Violation[] | undefined {
  const prefer = String(req.headers.prefer ?? '');
  // Its 400 too: its example's `errors` are about some other request. Not when the client chose the answer.
  if ((status !== 422 && status !== 400) || /\bcode=422\b|\bexample=/.test(prefer)) return undefined;
  const violations = String(headers['sl-violations'] ?? '');
  try {
    const found = (JSON.parse(violations) as Violation[]).filter((v) => v.location[0] === 'request' && v.severity === 'Error');
    return found.length > 0 ? found : undefined;
  } catch {
    return violations.includes('"location":["request"') ? [] : undefined;
  }
}

const proxy = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const upstream = httpRequest({ host: '127.0.0.1', port: prismPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const parts: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => parts.push(chunk));
      answer.on('end', () => {
        const pathname = new URL(req.url ?? '/', 'http://mock').pathname;
        const violations = refusedRequest(req, answer.statusCode, answer.headers);
        const bad = violations ? badRequests.find((b) => b.method === req.method && b.pattern.test(pathname)) : undefined;
        if (bad?.example) {
          const { 'content-length': _length, ...headers } = answer.headers;
          // The example's shape, with what was found wrong with this request where the service puts it.
          const errors = violations!.map((v) => ({ path: `/${v.location.slice(1).join('/')}`, message: v.message }));
          const body = errors.length > 0 && 'errors' in bad.example ? { ...bad.example, errors } : bad.example;
          res.writeHead(400, { ...headers, 'content-type': 'application/problem+json' }).end(JSON.stringify(body));
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(parts));
      });
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`the mock's Prism did not answer: ${err.message}`);
    });
    upstream.end(Buffer.concat(chunks));
  });
});
// The public port first: Prism's "listening" line, passed on, is what clients wait for.
await new Promise<void>((ready) => proxy.listen(Number(port), host, ready));
const prismPort = await new Promise<number>((found) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address() as AddressInfo;
    probe.close(() => found(free));
  });
});

const prism = fileURLToPath(new URL('../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));
const child = spawn(process.execPath, [prism, 'mock', '--host', '127.0.0.1', '--port', String(prismPort), ...args, file], { stdio: ['ignore', 'pipe', 'pipe'] });
// Prism's log names its own port: it is told as the public one.
const retell = (to: NodeJS.WriteStream) => (chunk: Buffer) => to.write(chunk.toString().replaceAll(`127.0.0.1:${prismPort}`, `${host}:${port}`));
child.stdout.on('data', retell(process.stdout));
child.stderr.on('data', retell(process.stderr));
const cleanup = () => {
  proxy.close();
  rmSync(dir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  cleanup();
  process.exit(code ?? (signal ? 1 : 0));
});
