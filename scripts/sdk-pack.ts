// `npm run sdk:pack`: builds the partners' SDK (clients/, @customer-chat/client) into clients/dist, ESM
// and declarations with the contract's types from generated/ beside them, and packs it with `npm pack`
// into artifacts/sdk/ (the CI artifact). `--build-only` stops after the build. Prints the tarball's path.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const clients = join(root, 'clients');
const dist = join(clients, 'dist');
const out = join(root, 'artifacts', 'sdk');

rmSync(dist, { recursive: true, force: true });
try {
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(clients, 'tsconfig.build.json')], { stdio: 'pipe' });
} catch (error) {
  const { stdout, stderr } = error as { stdout: Buffer; stderr: Buffer };
  console.error(`the SDK does not build:\n${stdout}${stderr}`);
  process.exit(1);
}

// tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits but not in declarations, which a
// partner's compiler would then look for as .ts sources that the package does not ship.
for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.d.ts')) continue;
  const path = join(dist, file);
  const text = readFileSync(path, 'utf8');
  const fixed = text.replace(/(from\s+['"])(\.\.?\/[^'"]+)\.ts(['"])/g, '$1$2.js$3');
  if (fixed !== text) writeFileSync(path, fixed);
}

if (process.argv.includes('--build-only')) {
  console.log(`built ${dist}`);
} else {
  mkdirSync(out, { recursive: true });
  const answer = execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: clients, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [packed] = JSON.parse(answer) as { filename: string; files: { path: string }[] }[];
  console.log(join(out, packed!.filename));
}
