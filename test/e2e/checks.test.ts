import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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
      "              example:\n                status: ok\n        '304':\n          $ref: '#/components/responses/NotModified'\n        '400':\n          $ref: '#/components/responses/BadRequest'\n        '500':\n          $ref: '#/components/responses/InternalError'\n  /ready:",
      '  /ready:',
    );
    expect(broken).not.to.equal(await readFile(file, 'utf8'));
    await writeFile(file, broken);
    const result = lint();
    expect(result.status).not.to.equal(0);
    expect(result.stdout + result.stderr)
      .to.contain('rule/media-type-has-example')
      .and.contain('rule/operation-has-500')
      .and.contain('rule/operation-has-400')
      .and.contain('rule/get-has-304');
  });

  it('a duplicated operationId fails the lint', async () => {
    const file = join(copy, 'openapi/chat.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('operationId: getReady', 'operationId: getHealth'));
    const result = lint();
    expect(result.status).not.to.equal(0);
    expect(result.stdout + result.stderr).to.contain('operation-operationId-unique');
  });
});

// The house rules (docs/architecture.md) are kept by `npm run check`: lint, frozen migrations, row types
// against the migrated database, SQL snapshots. Each case breaks one rule in a copy of the project and
// runs the real check on it.
describe('npm run check keeps the house rules', function () {
  this.timeout(120_000);
  const project = resolve('.');
  let copy: string;

  beforeEach(async () => {
    copy = await mkdtemp(join(tmpdir(), 'chat-rules-'));
    for (const entry of ['src', 'scripts', 'generated', 'eslint.config.js', 'package.json', 'tsconfig.json']) {
      await cp(join(project, entry), join(copy, entry), { recursive: true });
    }
    await symlink(join(project, 'node_modules'), join(copy, 'node_modules'), 'dir');
  });
  afterEach(() => rm(copy, { recursive: true, force: true }));

  const run = (script: string, ...args: string[]) =>
    spawnSync(process.execPath, [join(copy, script), ...args], { cwd: copy, encoding: 'utf8' });
  const lint = (...files: string[]) =>
    spawnSync(process.execPath, [join(project, 'node_modules/eslint/bin/eslint.js'), ...files], { cwd: copy, encoding: 'utf8' });
  const edit = async (path: string, change: (text: string) => string) => {
    const before = await readFile(join(copy, path), 'utf8');
    const after = change(before);
    expect(after, `the edit of ${path} changed nothing`).not.to.equal(before);
    await writeFile(join(copy, path), after);
  };
  const output = (r: SpawnSyncReturns<string>) => r.stdout + r.stderr;

  describe('lint: the layers', () => {
    const service = 'src/api-keys/api-key.service.ts';
    const repository = 'src/api-keys/api-key.repository.ts';

    it('passes a service and a repository that keep them', () => {
      const result = lint(service, repository, 'src/contacts/contact.repository.ts');
      expect(result.status, output(result)).to.equal(0);
    });

    it('fails a query built outside a repository, with or without importing kysely', async () => {
      await edit(service, (t) =>
        t.replace(/^/, "import { sql } from 'kysely';\n") +
        "\nexport const sneaky = (trx: Tx) => [trx.selectFrom('api_keys').selectAll().execute(), sql`select 1`.execute(trx)];\n",
      );
      const result = lint(service);
      expect(result.status).to.equal(1);
      expect(output(result)).to.contain('layers/no-query-outside-repository').and.contain("'kysely' is imported outside a repository");
    });

    it('fails a service or a repository that imports from http/', async () => {
      await edit(service, (t) => t.replace(/^/, "import type { Principal } from '../http/access.ts';\nexport type P = Principal;\n"));
      await edit(repository, (t) => t.replace(/^/, "import { problem } from '../http/problem.ts';\nexport const p = problem;\n"));
      const result = lint(service, repository);
      expect(result.status).to.equal(1);
      expect(output(result).match(/know no HTTP/g)).to.have.length(2);
    });

    it("fails an import of another feature's repository or handlers", async () => {
      await edit(service, (t) =>
        t.replace(/^/, "import { findContact } from '../contacts/contact.repository.ts';\nimport * as h from '../contacts/contact.handlers.ts';\nexport const x = [findContact, h];\n"),
      );
      const result = lint(service);
      expect(result.status).to.equal(1);
      expect(output(result)).to.contain("another feature's repository").and.contain("another feature's handlers");
    });

    it('fails an import between features that the feature graph does not allow', async () => {
      // files sits below conversations (messages attach files): the old circle conversations -> files -> conversations.
      await edit('src/files/file.service.ts', (t) => t.replace(/^/, "import { conversationOf } from '../conversations/conversation.service.ts';\nexport const c = conversationOf;\n"));
      const result = lint('src/files/file.service.ts');
      expect(result.status).to.equal(1);
      expect(output(result)).to.contain('layers/features').and.contain('src/files/ may not import src/conversations/');
    });

    it('fails a feature graph with a circle, even when every import follows it', async () => {
      await edit('eslint.config.js', (t) => t.replace("files: ['db', 'http', 'shared'],", "files: ['conversations', 'db', 'http', 'shared'],"));
      await edit('src/files/file.service.ts', (t) => t.replace(/^/, "import { conversationOf } from '../conversations/conversation.service.ts';\nexport const c = conversationOf;\n"));
      const result = lint('src/files/file.service.ts', 'src/api-keys/api-key.service.ts');
      expect(result.status).to.not.equal(0);
      expect(output(result)).to.match(/the feature graph in eslint\.config\.js has a circle: [a-z-]+ -> .*files -> conversations -> /);
    });

    it('fails a new folder of src/ that the feature graph does not place', async () => {
      await mkdir(join(copy, 'src/reminders'));
      await writeFile(join(copy, 'src/reminders/reminder.service.ts'), "import { newId } from '../shared/ids.ts';\nexport const id = () => newId('tenant');\n");
      const result = lint('src/reminders/reminder.service.ts');
      expect(result.status).to.equal(1);
      expect(output(result)).to.contain('src/reminders/ is not in the feature graph');
    });

    it('the graph written down is the one the code has: every allowed edge is used', async () => {
      // An edge nobody uses is a door left open for the next circle; the list shrinks when code moves.
      const { features } = (await import(`${pathToFileURL(join(project, 'eslint.config.js')).href}?graph`)) as { features: Record<string, string[]> };
      const used = new Set<string>();
      for (const file of await readdir(join(project, 'src'), { recursive: true })) {
        if (!file.endsWith('.ts') || !file.includes('/')) continue;
        const from = file.slice(0, file.indexOf('/'));
        const text = await readFile(join(project, 'src', file), 'utf8');
        for (const [, spec] of text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)) {
          const target = relative(join(project, 'src'), resolve(join(project, 'src', dirname(file)), spec!));
          if (target.includes('/') && !target.startsWith('..')) used.add(`${from} -> ${target.slice(0, target.indexOf('/'))}`);
        }
      }
      const unused = Object.entries(features).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`)).filter((edge) => !used.has(edge));
      expect(unused).to.deep.equal([]);
    });
  });

  describe('frozen migrations', () => {
    const check = (...args: string[]) => run('scripts/check-migrations.ts', ...args);
    const first = '2026-11-21T19-30-00_foundation.ts';

    it('passes the committed migrations', () => {
      const result = check();
      expect(result.status, output(result)).to.equal(0);
    });

    it('fails a changed migration, and --update does not accept the change', async () => {
      await edit(`src/db/migrations/${first}`, (t) => t + '\n// a harmless-looking edit\n');
      for (const args of [[], ['--update']]) {
        const result = check(...args);
        expect(result.status).to.equal(1);
        expect(result.stderr).to.contain(`${first} changed after it was committed`);
      }
    });

    it('fails a removed migration', async () => {
      await rm(join(copy, 'src/db/migrations', first));
      const result = check();
      expect(result.status).to.equal(1);
      expect(result.stderr).to.contain(`${first} was removed`);
    });

    it('fails a new migration without a checksum until --update records it', async () => {
      await writeFile(join(copy, 'src/db/migrations/2099-01-01T00-00-00_new.ts'), 'export async function up() {}\n');
      expect(check().stderr).to.contain('2099-01-01T00-00-00_new.ts has no checksum');
      expect(check('--update').status).to.equal(0);
      expect(check().status).to.equal(0);
    });
  });

  describe('row types', () => {
    it('pass as committed, and fail when schema.ts drifts from the migrations', async () => {
      const clean = run('scripts/check-row-types.ts');
      expect(clean.status, output(clean)).to.equal(0);
      await edit('src/db/schema.ts', (t) =>
        t
          .replace("  role: 'owner' | 'admin' | 'agent';", "  role: 'owner' | 'admin' | 'agent' | 'viewer';")
          .replace('  phone: string | null;', '  phone: string;')
          .replace('  prefix: string;\n', ''),
      );
      const drifted = run('scripts/check-row-types.ts');
      expect(drifted.status).to.equal(1);
      expect(drifted.stderr)
        .to.contain('memberships.role: the database allows admin, agent, owner but the type says admin, agent, owner, viewer')
        .and.contain('contacts.phone: the column is nullable')
        .and.contain('api_keys.prefix is in the database but not in schema.ts');
    });
  });

  describe('SQL snapshots', () => {
    const check = () => run('scripts/sql.ts', '--check');

    it('pass as committed', () => {
      const result = check();
      expect(result.status, output(result)).to.equal(0);
    });

    it('fail when a query changes without its snapshot', async () => {
      await edit('src/widgets/widget.repository.ts', (t) => t.replace(".orderBy('domain')", ".orderBy('created_at')"));
      const result = check();
      expect(result.status).to.equal(1);
      expect(result.stderr).to.contain('src/widgets/widget.repository.sql is out of date');
      expect(run('scripts/sql.ts').status).to.equal(0);
      expect(await readFile(join(copy, 'src/widgets/widget.repository.sql'), 'utf8')).to.contain('"created_at"');
      expect(check().status).to.equal(0);
    });

    it('fail when a repository function has no sample', async () => {
      await edit('src/widgets/widget.repository.ts', (t) => t + "\nexport async function countWidgets(trx: Tx) {\n  return trx.selectFrom('widgets').select((eb) => eb.fn.countAll().as('n')).execute();\n}\n");
      const result = check();
      expect(result.status).to.equal(1);
      expect(result.stderr).to.contain('countWidgets has no sample in scripts/sql/samples.ts');
    });
  });
});
