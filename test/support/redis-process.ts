// A redis-server of a test's own on a free port: the shared one is never stopped, paused or cut.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from 'redis';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A redis-server of the test's own: stopped, started again on the same port, its subscribers cut. */
export class RedisProcess {
  port = 0;
  #child: ChildProcess | undefined;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it, unless it runs. */
  async start(): Promise<void> {
    if (this.#child && this.#child.exitCode === null) return;
    if (this.port === 0) this.port = await freePort();
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        output += chunk;
        if (output.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${output}`)));
    });
  }

  /** Killed, as a crash or a failover: every connection is cut at once. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Redis answers nothing for `ms` (CLIENT PAUSE): connections stay open, replies wait. */
  async pause(ms: number): Promise<void> {
    await this.#admin(['CLIENT', 'PAUSE', String(ms), 'ALL']);
  }

  async #admin(command: string[]): Promise<unknown> {
    const admin = createClient({ url: this.url });
    await admin.connect();
    try {
      return await admin.sendCommand(command);
    } finally {
      admin.destroy();
    }
  }

  /** Cuts every subscribed connection and nothing else, as a managed Redis's maintenance may. */
  async killSubscribers(): Promise<number> {
    return Number(await this.#admin(['CLIENT', 'KILL', 'TYPE', 'pubsub']));
  }
}

