// What one read of the event feed costs PostgreSQL, its statement named or not: `npm run bench:feed-read`
// (DATABASE_URL required, a migrated database; PostgreSQL must run on this machine, its CPU is read from
// /proc). Every socket stream reads the feed after each commit of its tenant, and so do the events
// endpoint and the dispatchers: the read's planning (its horizon looks at pg_locks) is most of its cost
// unless the statement is kept by name. Each setting reads a tenant's feed (empty: the work is the plan and
// the horizon) BENCH_READS times on one connection, in turns, and prints the server's CPU per read.
//
//   DATABASE_URL=postgres://... BENCH_READS=2000 npm run bench:feed-read
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { FEED_START, readFeed } from '../../src/events/feed.repository.ts';

if (!/^postgres(ql)?:/.test(process.env.DATABASE_URL ?? '')) throw new Error('DATABASE_URL must name a PostgreSQL database');
// Four turns each; CPU is read in 10 ms ticks, so a turn should last well over that (2,000 reads: about 40 ms named).
const reads = Math.max(4, Math.round(Number(process.env.BENCH_READS ?? 2000) / 4) * 4);
if (!Number.isFinite(reads)) throw new Error('BENCH_READS must be a number');
const cpuOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const settings = [
  ['named', true],
  ['unnamed', false],
] as const;
const databases = await Promise.all(
  settings.map(([, named]) => openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: tmpdir(), poolMax: 1, namedStatements: named })),
);
const totals = settings.map(() => ({ cpu: 0, ms: 0, reads: 0 }));
const tenantId = 'tn_00000000-0000-7000-8000-000000000000';
for (let round = 0; round < 4; round++) {
  for (const [i, database] of databases.entries()) {
    const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0]!.pid;
    const cpu = cpuOf(pid);
    const started = performance.now();
    for (let n = 0; n < reads / 4; n++) await database.withTenant(tenantId, (trx) => readFeed(trx, { tenantId, after: FEED_START, limit: 500 }));
    totals[i]!.ms += performance.now() - started;
    totals[i]!.cpu += cpuOf(pid) - cpu;
    totals[i]!.reads += reads / 4;
  }
}
console.log(`feed read, one tenant, ${reads} reads each (a transaction each: begin with the tenant, the read, commit)`);
for (const [i, [name]] of settings.entries()) {
  const t = totals[i]!;
  console.log(`${name.padEnd(8)} PostgreSQL CPU ${((t.cpu * 1e6) / t.reads).toFixed(0).padStart(5)} µs per read   wall ${((t.ms * 1000) / t.reads).toFixed(0).padStart(5)} µs per read`);
}
await Promise.all(databases.map((d) => d.close()));
