import { readFileSync } from 'node:fs';
const prof = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas; let total = 0;
const skipMs = Number(process.env.SKIP_MS ?? 0); let t = 0;
for (let i = 0; i < prof.samples.length; i++) {
  t += dt[i] / 1000; if (t < skipMs) continue;
  const n = byId.get(prof.samples[i]); const f = n.callFrame;
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(f.url)?.[1] ?? (f.url.includes('/src/') ? 'src:' + f.url.split('/src/')[1] : f.url.startsWith('node:') ? f.url : f.url ? 'other' : '(native)');
  const key = `${f.functionName || '(anon)'} ${pkg}:${f.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + dt[i]); total += dt[i];
}
const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 40));
for (const [k, v] of top) console.log((v / total * 100).toFixed(1).padStart(5) + '%  ' + k);
console.log('total ms', (total / 1000).toFixed(0));
