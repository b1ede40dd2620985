// Preloaded into a benchmark's server (`node --expose-gc --import scripts/bench/memory-probe.ts`, see
// memoryAfterGc in support.ts): on SIGUSR2 it collects garbage and writes the process's memory to
// BENCH_MEMORY_FILE, so that memory is read after a collection without an endpoint in the server.
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env.BENCH_MEMORY_FILE;
const gc = (globalThis as { gc?: () => void }).gc;
if (file && gc) {
  process.on('SIGUSR2', () => {
    // Twice: what the first collection freed of weakly held objects is freed by the second.
    gc();
    gc();
    // Written whole, then renamed: the reader never sees half a file.
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
    renameSync(`${file}.tmp`, file);
  });
}
