// `npm run mock` as a child process on a free port, for the tests that ask it what a client would.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once Prism says it listens (every route loaded): the sentinel, not a clock. */
export async function startMock(): Promise<{ base: string; process: ChildProcess }> {
  const port = await freePort();
  const mock = spawn(process.execPath, ['scripts/mock.ts', '--port', String(port), '--verboseLevel', 'info'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      if (/Prism is listening/.test(output)) resolve();
    };
    mock.stdout!.on('data', seen);
    mock.stderr!.on('data', seen);
    mock.once('exit', (code) => reject(new Error(`the mock exited (${code}) before listening:\n${output}`)));
  });
  return { base: `http://127.0.0.1:${port}`, process: mock };
}
