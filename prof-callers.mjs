import { readFileSync } from 'node:fs';
const prof = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const target = process.argv[3];
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const chains = new Map(); let total = 0;
for (let i = 0; i < prof.samples.length; i++) {
  const n = byId.get(prof.samples[i]);
  if (n.callFrame.functionName !== target) continue;
  const chain = []; let p = parent.get(n.id);
  while (p && chain.length < Number(process.env.DEPTH ?? 8)) { const f = byId.get(p).callFrame; chain.push(`${f.functionName || '(anon)'}@${(f.url.split('/').pop())}:${f.lineNumber}`); p = parent.get(p); }
  const key = chain.join(' < ');
  chains.set(key, (chains.get(key) ?? 0) + prof.timeDeltas[i]); total += prof.timeDeltas[i];
}
for (const [k, v] of [...chains.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log((v / total * 100).toFixed(1).padStart(5) + '%  ' + k);
