// The fault suite's figures (requests, 5xx, lost, doubled, ...), printed as one table when the run ends,
// so CI's log shows what each guarantee was tested against, not only that it passed.
const figures: { suite: string; name: string; value: number | string }[] = [];

export function recordFigure(suite: string, name: string, value: number | string): void {
  figures.push({ suite, name, value });
}

export function printFigures(): void {
  if (figures.length === 0) return;
  const width = Math.max(...figures.map((f) => `${f.suite}: ${f.name}`.length));
  console.log('\n  fault figures');
  for (const f of figures) console.log(`    ${`${f.suite}: ${f.name}`.padEnd(width)}  ${f.value}`);
}
