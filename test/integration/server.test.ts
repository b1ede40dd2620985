import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { connect } from '../support/realtime.ts';

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
    // 'close', not 'exit': the output's last lines may still be in the pipe when the process has exited.
    const exited = new Promise<number | null>((resolve) => child!.once('close', (code) => resolve(code)));
    child!.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(output()).to.contain('"msg":"stopped"');
    // Stopped at once after its start, background reads still under way must end before the database
    // closes, not run into it (they used to warn 'PGlite is closed').
    expect(output().split('\n').filter((line) => /"level":[456]0\b/.test(line))).to.deep.equal([]);
  });

  it('on SIGTERM tells its sockets to reconnect elsewhere (1001) before it stops', async function () {
    this.timeout(60_000);
    const { url } = await start({});
    const registered = await fetch(`${url}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'socket@example.test', password: 'a long enough password', name: 'Socket' }),
    });
    expect(registered.status).to.equal(201);
    const { access_token } = (await registered.json()) as { access_token: string };
    const client = await connect(`${url.replace('http', 'ws')}/api/v1/ws`, { Authorization: `Bearer ${access_token}` });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    const closed = await client.closed;
    expect(closed.code, closed.reason).to.equal(1001);
    expect(await exited).to.equal(0);
  });

  it('finishes a request in flight when told to stop', async function () {
    this.timeout(60_000);
    const { url } = await start({});
    // One kept-alive connection: a first request answered proves the service accepted it, so the next one,
    // written whole on it before the signal, is the service's to finish (a connection still in the
    // listener's queue when it closes would be reset, whatever the service does).
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    /** Answers the status; `onWritten` hears when the whole request is on the socket. */
    const call = (method: string, path: string, body?: string, onWritten?: () => void) =>
      new Promise<number>((resolve, reject) => {
        const headers = body ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } : {};
        const req = httpRequest(`${url}${path}`, { method, agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        if (onWritten) req.on('finish', onWritten);
        req.end(body);
      });
    expect(await call('GET', '/api/health')).to.equal(200);
    // Register hashes a password (cost 12) on a worker: a request that is certainly still running at SIGTERM.
    let written!: () => void;
    const registerWritten = new Promise<void>((resolve) => (written = resolve));
    const inFlight = call('POST', '/api/v1/auth/register', JSON.stringify({ email: 'late@example.test', password: 'a long enough password', name: 'Late' }), written);
    await registerWritten;
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    const status = await inFlight;
    agent.destroy();
    expect(status).to.equal(201);
    expect(await exited).to.equal(0);
  });

  // The embedded database's thread is started before the service loads (src/db/embedded.ts): what goes
  // wrong there must still end the start, with the words of the failure.
  it('a second service on the same data directory is refused at once (75) and says which process holds it', async function () {
    this.timeout(60_000);
    await start({});
    const first = child!;
    try {
      await start({}).then(
        () => expect.fail('the second service should not listen'),
        (err: Error) => {
          expect(err.message).to.contain('exited with 75').and.contain(`in use by process ${first.pid}`);
        },
      );
    } finally {
      first.kill('SIGKILL');
    }
  });

  it('a data directory PGlite cannot open ends the start with the reason, not a hang', async function () {
    this.timeout(60_000);
    // Before the thread is spawned: a file where the database's directory should be.
    await writeFile(join(dataDir, 'pglite'), 'not a directory');
    await start({}).then(
      () => expect.fail('should not listen'),
      (err: Error) => expect(err.message).to.match(/exited with [1-9]/).and.contain('EEXIST'),
    );
    // On the thread, while the service loads: a directory of another PostgreSQL version.
    await rm(join(dataDir, 'pglite'));
    await mkdir(join(dataDir, 'pglite'));
    await writeFile(join(dataDir, 'pglite', 'PG_VERSION'), '99\n');
    await start({}).then(
      () => expect.fail('should not listen'),
      (err: Error) => expect(err.message).to.match(/exited with [1-9]/).and.contain('PGlite failed to initialize'),
    );
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
