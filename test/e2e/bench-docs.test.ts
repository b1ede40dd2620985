import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { render } from '../../scripts/bench/docs.ts';
import type { Run } from '../../scripts/bench/results.ts';

// docs/benchmarks.md is written from scripts/bench/results/*.json, and `npm run check` fails when it is
// not what they say. The check runs for real on a copy of the project with one thing changed.
describe('docs/benchmarks.md follows the recorded results', function () {
  this.timeout(30_000);
  const project = resolve('.');
  let copy: string;

  beforeEach(async () => {
    copy = await mkdtemp(join(tmpdir(), 'chat-bench-docs-'));
    await cp(join(project, 'scripts/bench/results'), join(copy, 'scripts/bench/results'), { recursive: true });
    await mkdir(join(copy, 'docs'));
    await cp(join(project, 'docs/benchmarks.md'), join(copy, 'docs/benchmarks.md'));
  });
  afterEach(() => rm(copy, { recursive: true, force: true }));

  const docs = (...args: string[]) =>
    spawnSync(process.execPath, [join(project, 'scripts/bench/docs.ts'), '--root', copy, ...args], { encoding: 'utf8' });

  it('the committed page is current', () => {
    const result = docs('--check');
    expect(result.status, result.stderr).to.equal(0);
  });

  it('a new run recorded without regenerating the page fails the check, and regenerating mends it', async () => {
    const file = join(copy, 'scripts/bench/results/fanout.json');
    const json = JSON.parse(await readFile(file, 'utf8')) as { runs: Run[] };
    const last = json.runs.at(-1)!;
    json.runs.push({ ...last, date: '2030-01-01T00:00:00.000Z', figures: { ...last.figures, '1000.pair_ratio_p50': 2.5 } });
    await writeFile(file, JSON.stringify(json));

    const check = docs('--check');
    expect(check.status).to.equal(1);
    expect(check.stderr).to.contain('docs/benchmarks.md is out of date');

    expect(docs().status).to.equal(0);
    expect(docs('--check').status).to.equal(0);
    expect(await readFile(join(copy, 'docs/benchmarks.md'), 'utf8')).to.contain('2030-01-01');
  });

  it('a hand-edited figure fails the check', async () => {
    const page = join(copy, 'docs/benchmarks.md');
    const text = await readFile(page, 'utf8');
    const edited = text.replace(/\*\*[0-9.]+x\*\*/, '**1.00x**');
    expect(edited).not.to.equal(text);
    await writeFile(page, edited);
    expect(docs('--check').status).to.equal(1);
  });

  it('shows the median of the runs on record of each database, and whether the goal is met', () => {
    const run = (database: string, ratio: number, date: string): Run => ({ date, node: 'v26', cpus: 2, database, figures: { ratio } });
    const page = render(
      new Map([
        ['webhooks', [run('postgres', 0.6, '2030-01-01T00:00:00Z'), run('postgres', 0.9, '2030-01-02T00:00:00Z'), run('postgres', 0.75, '2030-01-03T00:00:00Z'), run('pglite', 0.4, '2030-01-03T00:00:00Z')]],
      ]),
    );
    const lines = page.split('\n').filter((l) => l.startsWith('| webhook deliveries/s'));
    expect(lines).to.have.length(2);
    expect(lines.find((l) => l.includes('PostgreSQL'))).to.contain('**0.75**').and.contain('| met |').and.contain('median of 3 runs, 2030-01-01 to 2030-01-03');
    expect(lines.find((l) => l.includes('PGlite'))).to.contain('**0.40**').and.contain('not met').and.contain('one run, 2030-01-03');
    expect(page).to.contain('webhook lag from commit to delivery');
  });

  it('counts each repetition of a run that records them (per_run), and a run without them once', () => {
    const run = (date: string, medianOf: number, perRun?: number[]): Run => ({
      date,
      node: 'v26',
      cpus: 2,
      database: 'postgres',
      figures: { 'delivery.dom_of_ws_p99': medianOf },
      ...(perRun ? { per_run: perRun.map((v) => ({ 'delivery.dom_of_ws_p99': v })) } : {}),
    });
    const page = render(new Map([['app', [run('2030-01-01T00:00:00Z', 2), run('2030-01-02T00:00:00Z', 1.1, [1.3, 1.1, 1.0, 1.4, 1.2])]]]));
    const line = page.split('\n').find((l) => l.startsWith("| a visitor's message in the agent's inbox DOM"));
    // 2, 1.3, 1.1, 1.0, 1.4, 1.2: six figures, median 1.25.
    expect(line).to.contain('**1.25x**').and.contain('not met').and.contain('median of 6 runs, 2030-01-01 to 2030-01-02');
  });
});
