import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';

// `npm run check` must fail when generated code drifts from the contract or the contract breaks a
// lint rule. Each case runs the real tool on a copy of the project with one thing broken.
describe('npm run check catches drift and lint errors', function () {
  this.timeout(120_000);
  const project = resolve('.');
  let copy: string;

  beforeEach(async () => {
    copy = await mkdtemp(join(tmpdir(), 'chat-check-'));
    for (const entry of ['openapi', 'generated', 'redocly.yaml', '.redocly.lint-ignore.yaml']) {
      await cp(join(project, entry), join(copy, entry), { recursive: true });
    }
  });
  afterEach(() => rm(copy, { recursive: true, force: true }));

  const gen = (...args: string[]) =>
    spawnSync(process.execPath, [join(project, 'scripts/gen.ts'), '--root', copy, ...args], { encoding: 'utf8' });
  const lint = () =>
    spawnSync(join(project, 'node_modules/.bin/redocly'), ['lint', '--config', join(copy, 'redocly.yaml')], {
      cwd: copy,
      encoding: 'utf8',
    });

  it('the untouched copy passes both', () => {
    expect(gen('--check').status).to.equal(0);
    expect(lint().status, lint().stdout + lint().stderr).to.equal(0);
  });

  it('a hand-edited generated file fails the drift check', async () => {
    const file = join(copy, 'generated/api.ts');
    await writeFile(file, (await readFile(file, 'utf8')).replace('Role: "owner" | "admin" | "agent";', 'Role: "owner" | "admin" | "agent" | "god";'));
    const result = gen('--check');
    expect(result.status).to.equal(1);
    expect(result.stderr).to.contain('generated/api.ts is out of date');
  });

  it('a contract change without regeneration fails the drift check', async () => {
    const file = join(copy, 'openapi/chat.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('enum: [owner, admin, agent]', 'enum: [owner, admin, agent, viewer]'));
    expect(gen('--check').status).to.equal(1);
  });

  it('an operation without an example or a 500 response fails the lint', async () => {
    const file = join(copy, 'openapi/chat.yaml');
    const broken = (await readFile(file, 'utf8')).replace(
      "              example:\n                status: ok\n        '500':\n          $ref: '#/components/responses/InternalError'\n  /ready:",
      '  /ready:',
    );
    expect(broken).not.to.equal(await readFile(file, 'utf8'));
    await writeFile(file, broken);
    const result = lint();
    expect(result.status).not.to.equal(0);
    expect(result.stdout + result.stderr).to.contain('rule/media-type-has-example').and.contain('rule/operation-has-500');
  });

  it('a duplicated operationId fails the lint', async () => {
    const file = join(copy, 'openapi/chat.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('operationId: getReady', 'operationId: getHealth'));
    const result = lint();
    expect(result.status).not.to.equal(0);
    expect(result.stdout + result.stderr).to.contain('operation-operationId-unique');
  });
});
