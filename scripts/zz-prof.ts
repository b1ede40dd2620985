import { readFileSync, readdirSync } from 'node:fs';
for (const f of readdirSync('/tmp/prof')) {
  const p = JSON.parse(readFileSync('/tmp/prof/' + f, 'utf8'));
  const byId = new Map(p.nodes.map((n: any) => [n.id, n]));
  const self = new Map<number, number>();
  const dt = p.timeDeltas as number[];
  p.samples.forEach((s: number, i: number) => self.set(s, (self.get(s) ?? 0) + (dt[i] ?? 0)));
  const byUrl = new Map<string, number>();
  const byFn = new Map<string, number>();
  for (const [id, us] of self) {
    const n: any = byId.get(id);
    const url = n.callFrame.url.replace(/.*node_modules\//, 'nm/').replace(/.*\/work\/main\//, '');
    const pkg = url.startsWith('nm/') ? url.split('/').slice(0, url.split('/')[1].startsWith('@') ? 3 : 2).join('/') : url.split('/').slice(0, 2).join('/');
    byUrl.set(pkg || n.callFrame.functionName, (byUrl.get(pkg || n.callFrame.functionName) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(f, 'total ms', Math.round(total / 1000), 'duration ms', Math.round((p.endTime - p.startTime) / 1000));
  for (const [k, v] of [...byUrl].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log('  ', Math.round(v / 1000), k);
  for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log('    fn', Math.round(v / 1000), k);
}
