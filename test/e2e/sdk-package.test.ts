import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { CLIENT_FRAME_TYPES, CONTROL_FRAME_TYPES } from '../../clients/contract.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Run {
  stdout: string;
  stderr: string;
}

// Asynchronous: the service answering the partner's program runs in this process.
function run(file: string, args: string[], options: { cwd: string; timeout: number; env?: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { ...options, encoding: 'utf8', maxBuffer: 10_000_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed (${error.message}):\n${stdout}${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

// npm, run from `npm exec`, leaves npm_* settings (the project's prefix among them) in the environment:
// the partner's npm must see none of them, or it would install into this repository.
function partnerEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

interface LockEntry {
  version: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  [field: string]: unknown;
}

// The partner's lockfile: the package from its tarball, its dependencies at the versions this repository
// locks (their tarballs are in npm's cache), so `npm ci --offline` needs no registry.
async function partnerLock(tarball: string): Promise<object> {
  const sdk = JSON.parse(await readFile(join(ROOT, 'clients/package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };
  const repoLock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packages: Record<string, LockEntry> = {
    [`node_modules/${sdk.name}`]: { version: sdk.version, resolved: `file:${tarball}`, dependencies: sdk.dependencies },
  };
  const add = (name: string): void => {
    if (packages[`node_modules/${name}`]) return;
    const entry = repoLock.packages[`node_modules/${name}`];
    if (!entry) throw new Error(`${name}, a dependency of the SDK, is not in package-lock.json`);
    const { dev: _dev, devOptional: _devOptional, ...kept } = entry;
    packages[`node_modules/${name}`] = kept as LockEntry;
    for (const dependency of Object.keys(entry.dependencies ?? {})) add(dependency);
  };
  for (const dependency of Object.keys(sdk.dependencies)) add(dependency);
  return { name: 'partner', lockfileVersion: 3, requires: true, packages: { '': { name: 'partner', dependencies: { [sdk.name]: `file:${tarball}` } }, ...packages } };
}

describe('the SDK package (@customer-chat/client from clients/)', function () {
  this.timeout(90_000);
  let server: RealtimeServer;
  let dir: string | undefined;
  before(async () => {
    server = await startRealtime();
  });
  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('packed, installed outside the repository, compiles under strict and runs its flow against the service', async () => {
    const packed = await run(process.execPath, ['scripts/sdk-pack.ts'], { cwd: ROOT, timeout: 60_000 });
    const tarballPath = packed.stdout.trim().split('\n').at(-1)!;
    expect(tarballPath).to.match(/artifacts\/sdk\/customer-chat-client-\d+\.\d+\.\d+\.tgz$/);

    dir = await mkdtemp(join(tmpdir(), 'chat-sdk-partner-'));
    expect(dir.startsWith(ROOT)).to.equal(false);
    const tarball = basename(tarballPath);
    await copyFile(tarballPath, join(dir, tarball));
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'partner', private: true, type: 'module', dependencies: { '@customer-chat/client': `file:${tarball}` } }));
    await writeFile(join(dir, 'package-lock.json'), JSON.stringify(await partnerLock(tarball), null, 2));
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noUncheckedIndexedAccess: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['es2022', 'dom'],
          types: [],
          // The package's declarations are checked too: they must stand alone.
          skipLibCheck: false,
        },
        files: ['main.ts'],
      }),
    );
    await copyFile(join(ROOT, 'test/fixtures/sdk-partner/main.ts'), join(dir, 'main.ts'));
    await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, timeout: 60_000, env: partnerEnv() });
    const installed = JSON.parse(await readFile(join(dir, 'node_modules/@customer-chat/client/package.json'), 'utf8')) as { files: string[] };
    expect(installed.files).to.include('dist');
    expect((await readFile(join(dir, 'node_modules/@customer-chat/client/README.md'), 'utf8')).length).to.be.greaterThan(0);

    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir, timeout: 60_000 });

    const base = server.wsUrl.replace(/^ws/, 'http').replace(/\/v1\/ws$/, '');
    const { stdout } = await run(process.execPath, [join(dir, 'main.js'), base], { cwd: dir, timeout: 30_000, env: partnerEnv() });
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      tenant: string;
      refreshes: number;
      audience: string;
      sentId: string;
      helloMessageId: string;
      contents: string[];
      notFound: { code: string; status: number; requestId?: string };
      beforeCut: string;
      dialled: string[];
      reconnects: number;
      statuses: string[];
      repeated: number;
      delivered: number;
      end: { code: number };
      replayed: string;
      keyAudience: string;
      keyMessage: string;
      keyEnd: { code: number; error?: string; reconnects: number };
    };
    expect(seen.tenant).to.match(/^tn_/);
    // Two calls refused at once shared one refresh.
    expect(seen.refreshes).to.equal(1);
    expect(seen.audience).to.equal('member');
    expect(seen.helloMessageId).to.equal(seen.sentId);
    expect(seen.notFound).to.include({ code: 'ERR_NOT_FOUND', status: 404 });
    expect(seen.notFound.requestId).to.be.a('string');
    // The first connection on a ticket; after the cut, a new ticket and the last event's id; the later run's, the id it was given.
    expect(seen.dialled).to.have.length(3);
    expect(seen.dialled.every((url) => new URL(url).searchParams.has('ticket'))).to.equal(true);
    expect(new URL(seen.dialled[2]!).searchParams.get('last_event_id')).to.equal(seen.beforeCut);
    expect(new URL(seen.dialled[0]!).searchParams.has('last_event_id')).to.equal(false);
    expect(new URL(seen.dialled[1]!).searchParams.get('last_event_id')).to.equal(seen.beforeCut);
    expect(seen.reconnects).to.equal(1);
    expect(seen.statuses).to.deep.equal(['open', 'reconnecting', 'open', 'closed']);
    // Every frame came twice from the doubling WebSocket; each event was handed out once.
    expect(seen.contents).to.deep.equal(['Hello from the SDK', 'While you were away']);
    expect(seen.delivered).to.be.at.least(2);
    expect(seen.repeated).to.equal(0);
    expect(seen.end.code).to.equal(1000);
    expect(seen.replayed).to.equal('While you were away');
    // An API key's client: its headers on REST and on the upgrade.
    expect(seen.keyAudience).to.equal('integration');
    expect(seen.keyMessage).to.equal('Sent with a key');
    // Its socket, closed with 4001 by the key's revocation, ended for good after one look.
    expect(seen.keyEnd).to.deep.equal({ code: 4001, error: 'ERR_UNAUTHENTICATED', reconnects: 1 });
  });

  it('declares the control and client frames the AsyncAPI document lists', async () => {
    const asyncapi = parse(await readFile(join(ROOT, 'openapi/events.asyncapi.yaml'), 'utf8')) as {
      operations: Record<string, { messages: { $ref: string }[] }>;
      channels: { events: { messages: Record<string, { $ref: string }> } };
      components: { messages: Record<string, { name: string }> };
    };
    const names = (operation: string): string[] =>
      asyncapi.operations[operation]!.messages.map((m) => {
        const key = m.$ref.split('/').at(-1)!;
        const message = asyncapi.channels.events.messages[key]!.$ref.split('/').at(-1)!;
        return asyncapi.components.messages[message]!.name;
      });
    expect([...CONTROL_FRAME_TYPES].sort()).to.deep.equal(names('sendControl').sort());
    expect([...CLIENT_FRAME_TYPES].sort()).to.deep.equal(names('receiveClientFrames').sort());
  });
});
