// `npm run mock`: Prism on the contract, answering the paths the service answers (`/api/health`,
// `/api/v1/...`), so a frontend switches between mock and service by changing only its base URL.
// Prism matches request paths against the document's paths and ignores the servers' path, so it is
// given a copy of the contract whose paths carry the base path; the contract itself is not changed.
//   node scripts/mock.ts [--host 127.0.0.1] [--port 4010] [prism options...]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

const prism = fileURLToPath(new URL('../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));
const child = spawn(process.execPath, [prism, 'mock', '--host', host, '--port', port, ...args, file], { stdio: 'inherit' });
const cleanup = () => rmSync(dir, { recursive: true, force: true });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  cleanup();
  process.exit(code ?? (signal ? 1 : 0));
});
