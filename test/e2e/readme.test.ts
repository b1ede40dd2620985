import { readFileSync } from 'node:fs';
import { expect } from 'chai';

// The README's configuration table is what operators read: it must name every variable the service
// reads (src/config.ts) and none it does not.
describe('README', () => {
  const readme = readFileSync('README.md', 'utf8');
  const config = readFileSync('src/config.ts', 'utf8');

  const section = (title: string) => {
    const start = readme.indexOf(`\n## ${title}\n`);
    expect(start, `README has a "${title}" section`).to.be.greaterThan(-1);
    const end = readme.indexOf('\n## ', start + 1);
    return readme.slice(start, end === -1 ? undefined : end);
  };

  it('documents every configuration variable of src/config.ts, and no other', () => {
    const read = new Set([...config.matchAll(/^\s{6}([A-Z][A-Z0-9_]+): \w+(?:\([^)]*\))?\(\{/gm)].map((m) => m[1]!));
    expect(read.size, 'variables found in src/config.ts').to.be.greaterThan(40);
    const rows = section('Configuration')
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    const documented = new Set(rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!)));
    expect([...read].filter((name) => !documented.has(name)), 'read but not in the README').to.deep.equal([]);
    expect([...documented].filter((name) => !read.has(name)), 'in the README but not read').to.deep.equal([]);
  });

  it('stays short, and links only to files that exist', () => {
    expect(readme.split('\n').length).to.be.at.most(300);
    const missing = [...readme.matchAll(/\]\(((?:docs|src|openapi)\/[^)#\s]+)/g)].map((m) => m[1]!).filter((path) => {
      try {
        readFileSync(path);
        return false;
      } catch {
        return true;
      }
    });
    expect(missing).to.deep.equal([]);
  });
});
