import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';

// `npm run stack:check` (in `npm run check`) must fail when docker-compose.yml drifts from the shape
// `npm run stack` starts. Each case runs the real check on a copy with one thing changed.
describe('npm run stack:check keeps docker-compose.yml in the shape of npm run stack', function () {
  this.timeout(30_000);
  const project = resolve('.');
  let copy: string;

  beforeEach(async () => {
    copy = await mkdtemp(join(tmpdir(), 'chat-stack-check-'));
    for (const entry of ['docker-compose.yml', 'docker']) await cp(join(project, entry), join(copy, entry), { recursive: true });
  });
  afterEach(() => rm(copy, { recursive: true, force: true }));

  const check = () => spawnSync(process.execPath, [join(project, 'scripts/stack/check.ts'), '--root', copy], { encoding: 'utf8' });
  const edit = async (file: string, change: (text: string) => string) => {
    const path = join(copy, file);
    const before = await readFile(path, 'utf8');
    const after = change(before);
    expect(after, 'the edit changed the file').to.not.equal(before);
    await writeFile(path, after);
  };

  it('passes the committed compose file', () => {
    const result = check();
    expect(result.status, result.stderr).to.equal(0);
  });

  it('fails an app replica removed', async () => {
    await edit('docker-compose.yml', (t) => t.replace('  app-3:\n    <<: *app\n', ''));
    const result = check();
    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain('docker-compose.yml has no service app-3');
  });

  it('fails an app bypassing PgBouncer, and an environment name npm run stack does not set', async () => {
    await edit('docker-compose.yml', (t) => t.replace('@pgbouncer:6432/chat', '@postgres:5432/chat').replace('    LOG_LEVEL: info\n', '    LOG_LEVEL: info\n    SESSION_PINNING: "on"\n'));
    const result = check();
    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain("app-1's DATABASE_URL does not go through pgbouncer:6432");
    expect(result.stderr).to.contain("app-2's environment has SESSION_PINNING");
  });

  it('fails a service only compose has, and a hand-edited balancer configuration', async () => {
    await edit('docker-compose.yml', (t) => t.replace('services:\n', 'services:\n  memcached:\n    image: memcached:1.6.38-bookworm\n'));
    await edit('docker/haproxy/haproxy.cfg', (t) => t.replace('timeout tunnel 65s', 'timeout tunnel 10s'));
    const result = check();
    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain('service memcached is in docker-compose.yml but not in npm run stack');
    expect(result.stderr).to.contain('docker/haproxy/haproxy.cfg is not what scripts/stack/topology.ts generates');
  });
});
