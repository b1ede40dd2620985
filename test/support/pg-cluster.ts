import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away PostgreSQL cluster on a loopback port, for tests that need what a long-lived server no
 * longer has: small transaction ids (the shared server's have long passed every small power of ten), or
 * a server the test may stop. Uses the Debian binaries of the local server; undefined when there are none.
 */
export interface ThrowawayCluster {
  url: string;
  port: number;
  stop(): void;
}

function binDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startThrowawayCluster(): Promise<ThrowawayCluster | undefined> {
  const bin = binDir();
  if (!bin) return undefined;
  // initdb refuses to run as root: the cluster belongs to the postgres user when we are root.
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) => {
    const result = asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${cmd} failed: ${result.stderr || result.stdout}`);
  };
  const dir = mkdtempSync(join(tmpdir(), 'chat-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  run('pg_ctl', ['-D', dataDir, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  const stop = () => {
    try {
      run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    const psql = (sqlText: string) => {
      const result = spawnSync(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-qc', sqlText], {
        encoding: 'utf8',
      });
      if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
    };
    // As in CI: the service's role owns its database but is not a superuser.
    psql('CREATE ROLE chat_owner LOGIN CREATEROLE');
    psql('CREATE DATABASE chat OWNER chat_owner');
  } catch (err) {
    stop();
    throw err;
  }
  return { url: `postgres://chat_owner@127.0.0.1:${port}/chat`, port, stop };
}
