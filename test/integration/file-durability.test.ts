import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

// A put to local disk is durable when it resolves: what a power cut would lose cannot be staged here,
// so the test reads the system calls a real put makes (strace, which .ci/run installs) and holds their
// order: the bytes flushed before the rename, the directory flushed after it.

const STRACE = ['/usr/bin/strace', '/bin/strace'].find((path) => existsSync(path));
const STORAGE = new URL('../../src/files/storage.ts', import.meta.url).href;

interface Call {
  name: string;
  /** The first argument as strace prints it with -y: a path, or a descriptor with its path. */
  target: string;
}

/** Puts `keys` one after the other in a child process under strace; answers its fsyncs and renames in order. */
async function tracedPuts(root: string, keys: string[]): Promise<Call[]> {
  const log = join(root, '..', 'strace.log');
  const script = `
    import { Readable } from 'node:stream';
    const { LocalStorage } = await import(${JSON.stringify(STORAGE)});
    const storage = new LocalStorage(${JSON.stringify(root)});
    for (const key of ${JSON.stringify(keys)}) await storage.put(key, Readable.from([Buffer.alloc(300_000, 7)]));
  `;
  await promisify(execFile)(STRACE!, ['-f', '-y', '-qq', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2', '-o', log, process.execPath, '--input-type=module', '-e', script]);
  const calls: Call[] = [];
  for (const line of (await readFile(log, 'utf8')).split('\n')) {
    // "1234  fsync(21</tmp/x/t/f.part>) = 0", "1234  rename("/tmp/x/t/f.part", "/tmp/x/t/f") = 0"
    const match = /^\d+\s+(\w+)\((?:AT_FDCWD(?:<[^>]*>)?, )?(?:\d+<([^>]*)>|"([^"]*)")/.exec(line);
    if (match && !line.includes('= -1')) calls.push({ name: match[1]!, target: match[2] ?? match[3]! });
  }
  // Everything under the test's own directory (the root's parent, which a put that makes the root flushes too).
  return calls.filter((c) => c.target.startsWith(join(root, '..')));
}

describe('files: a put to local disk is on the disk when it resolves', function () {
  this.timeout(30_000);
  let dir: string;
  let root: string;

  before(function () {
    // CI installs strace; elsewhere, a machine without it cannot run this.
    if (!STRACE) {
      if (process.env.CI) throw new Error('strace is needed for this test (apt-get install strace)');
      this.skip();
    }
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'files-durable-'));
    root = join(dir, 'files');
    await mkdir(root);
  });

  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("flushes the bytes before the rename, then the directory, and the new tenant directory's entry", async () => {
    const calls = await tracedPuts(root, ['tenant_a/file_1']);
    const renameAt = calls.findIndex((c) => c.name.startsWith('rename'));
    expect(renameAt, JSON.stringify(calls)).to.be.greaterThan(-1);
    const partial = calls[renameAt]!.target;
    expect(partial).to.match(/tenant_a\/file_1\.[0-9a-f-]+\.part$/);
    const before = calls.slice(0, renameAt);
    const after = calls.slice(renameAt + 1);
    expect(before.some((c) => /sync/.test(c.name) && c.target === partial), 'the file flushed before its rename').to.equal(true);
    expect(after.map((c) => `${c.name} ${c.target}`)).to.deep.equal([`fsync ${join(root, 'tenant_a')}`, `fsync ${root}`]);
  });

  it("flushes the tenant directory's entry on later puts too: the put that made it may have failed first", async () => {
    const calls = await tracedPuts(root, ['tenant_a/file_1', 'tenant_a/file_2']);
    const secondRename = calls.findLastIndex((c) => c.name.startsWith('rename'));
    expect(calls[secondRename]!.target).to.match(/file_2\.[0-9a-f-]+\.part$/);
    expect(calls.slice(secondRename + 1).map((c) => `${c.name} ${c.target}`)).to.deep.equal([`fsync ${join(root, 'tenant_a')}`, `fsync ${root}`]);
  });

  it('a root made by the put is flushed into its parent too', async () => {
    const fresh = join(dir, 'fresh-root');
    const calls = await tracedPuts(fresh, ['tenant_a/file_1']);
    const renameAt = calls.findIndex((c) => c.name.startsWith('rename'));
    expect(calls.slice(renameAt + 1).map((c) => `${c.name} ${c.target}`)).to.deep.equal([`fsync ${join(fresh, 'tenant_a')}`, `fsync ${fresh}`, `fsync ${dir}`]);
  });
});
