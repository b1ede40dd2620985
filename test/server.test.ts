import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

// The real entry point, as `npm start` runs it: embedded database under a fresh DATA_DIR, no services.
describe('the service process', () => {
  let dataDir: string;
  let child: ChildProcess | undefined;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'chat-server-'));
  });
  afterEach(async () => {
    child?.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  function start(env: Record<string, string>): Promise<{ url: string; output: () => string }> {
    let output = '';
    child = spawn(process.execPath, ['src/server.ts'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Promise((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(output);
        if (match) resolve({ url: match[1]!, output: () => output });
      };
      child!.stdout!.on('data', onData);
      child!.stderr!.on('data', onData);
      child!.once('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
    });
  }

  it('starts on the embedded defaults, answers /api/health and stops cleanly on SIGTERM', async function () {
    this.timeout(60_000);
    const { url, output } = await start({});
    const res = await fetch(`${url}/api/health`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 'ok' });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(output()).to.contain('"msg":"stopped"');
  });

  it('finishes a request in flight when told to stop', async function () {
    this.timeout(60_000);
    const { url } = await start({});
    // Register hashes a password (cost 10) on a worker: a request that is certainly still running at SIGTERM.
    const inFlight = fetch(`${url}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'late@example.test', password: 'a long enough password', name: 'Late' }),
    });
    await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).to.equal(201);
    expect(await exited).to.equal(0);
  });

  it('refuses to start with bad configuration, naming each bad variable', async function () {
    this.timeout(60_000);
    await start({ PORT: 'x', DATABASE_URL: 'mysql://nope' }).then(
      () => expect.fail('should not listen'),
      (err: Error) => {
        expect(err.message).to.contain('exited with 78').and.contain('PORT').and.contain('DATABASE_URL');
      },
    );
  });
});
