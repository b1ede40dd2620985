// 50 concurrent 20 MiB uploads on each storage backend, beside a plain copy of the same bytes to the same
// disk or S3 server in the same run, and the service's peak RSS growth while they run.
//   npm run bench:files            (records its figures in scripts/bench/results/files.json)
//   BENCH_PGLITE=dir npm run bench:files   (the service's database in a data directory, not in memory)
// The service runs in a process of its own on an embedded database; the S3 server is s3rver on loopback.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import { S3Storage } from '../../src/files/storage.ts';
import { flatFigures, writeResults } from './results.ts';
import { startProcess, threadCpuSince } from './support.ts';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const FILE_BYTES = 20 * 1024 * 1024;
const JWT_SECRET = 'bench-secret-that-is-long-enough-for-hs256-0123456789';
const SERVER = new URL('../../src/server.ts', import.meta.url).pathname;
const SINK = new URL('./upload-sink.ts', import.meta.url).pathname;

interface Row {
  backend: string;
  uploads: number;
  bytes: number;
  service_seconds: number;
  service_mb_per_s: number;
  plain_copy_seconds: number;
  plain_copy_mb_per_s: number;
  ratio: number;
  rss_baseline_mib: number;
  rss_peak_growth_mib: number;
  rss_peak_over_lowest_mib: number;
  /** CPU (user + system) per MB uploaded, in ms: the service's process, and this benchmark's (the clients). */
  service_cpu_ms_per_mb: number;
  client_cpu_ms_per_mb: number;
  /**
   * The service's CPU per MB by kind of thread (support.ts, threadCpu), user and system: the event loop,
   * V8's helpers (garbage collection), the libuv pool (file writes and the flushes before each rename),
   * the hashing thread.
   */
  service_cpu_ms_per_mb_by_thread: Record<string, { user: number; system: number }>;
  /**
   * Local disk only: the plain copy flushed to the disk as each file ends (fsync), as the service's puts
   * are: the copy into the page cache alone runs at memory speed and promises nothing.
   */
  durable_copy_mb_per_s?: number;
  ratio_to_durable_copy?: number;
  /** Local disk only: a bare node:http server writing each body to a file (scripts/bench/upload-sink.ts). */
  bare_http_mb_per_s?: number;
  ratio_to_bare_http?: number;
  bare_http_cpu_ms_per_mb?: number;
}

const content = randomBytes(FILE_BYTES);
const mb = (bytes: number, seconds: number) => bytes / 1e6 / seconds;

/** One multipart upload of `content`, with a known length; resolves with the answer. */
function upload(base: string, token: string, name: string): Promise<{ status: number; body: any }> {
  // A boundary as curl makes them (browsers' are as long): the parser's search skips by its length.
  const boundary = `------------------------${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/v1/files`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        'Content-Length': String(head.length + content.length + tail.length),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    // 1 MiB chunks from the one buffer: the client holds a single copy of the bytes however many uploads.
    pipeline(Readable.from(chunksOf(head, tail)), req).catch(reject);
  });
}

function* chunksOf(head: Buffer, tail: Buffer) {
  yield head;
  for (let at = 0; at < content.length; at += 1024 * 1024) yield content.subarray(at, at + 1024 * 1024);
  yield tail;
}

async function register(base: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: 'correct horse battery staple', name: 'Bench' }),
  });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

if (process.env.BENCH_PGLITE !== undefined && !['dir', 'memory'].includes(process.env.BENCH_PGLITE)) throw new Error('BENCH_PGLITE: dir or memory');
const pgliteInDirectory = process.env.BENCH_PGLITE === 'dir';

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return (performance.now() - started) / 1000;
}

async function runBackend(backend: 'local' | 's3', dir: string, env: Record<string, string>, plainCopy: () => Promise<void>): Promise<Row> {
  const service = await startProcess(SERVER, {
    NODE_ENV: 'production',
    REQUIRE_HTTPS: 'false',
    JWT_SECRET,
    // BENCH_PGLITE=dir: the database in a data directory, as `npm start` runs it, instead of in memory. In
    // memory, one run in three or four read an RSS growth of 340 MiB: 339 MiB of regions held since the
    // start (128, 164 and 47 MiB) were given back during the run, after a new region of 154 MiB had come
    // (sampled from /proc/<pid>/smaps), so the peak came before the low. With a data directory no run did.
    DATABASE_URL: pgliteInDirectory ? `pglite://${join(dir, `${backend}-db`)}` : 'pglite://memory',
    DATA_DIR: join(dir, `${backend}-service`),
    BCRYPT_COST: '4',
    RATE_LIMIT_PER_MINUTE: '1000000',
    VALIDATE_RESPONSES: 'true',
    ...env,
  });
  try {
    const token = await register(service.url);
    // Warm-up: the first upload compiles the paths it takes.
    const warm = await upload(service.url, token, 'warm-up');
    if (warm.status !== 201) throw new Error(`warm-up upload: ${warm.status} ${JSON.stringify(warm.body)}`);
    // Growth is the largest rise of RSS over its lowest reading before it. From the first reading, the
    // warm-up's garbage, collected during the run, once made a high start and a growth of 0. From the
    // lowest reading of the whole run, memory held since the start and given back after the peak (339 MiB
    // in one run in three or four, in memory: see above) counted as growth though the peak came first.
    const baseline = service.rssKiB();
    let low = baseline;
    let peak = baseline;
    let growth = 0;
    const sample = () => {
      const rss = service.rssKiB();
      peak = Math.max(peak, rss);
      low = Math.min(low, rss);
      growth = Math.max(growth, rss - low);
    };
    const sampler = setInterval(sample, 10);
    let answers: { status: number; body: any }[] = [];
    const cpuBefore = service.cpuSeconds();
    const threadsBefore = service.threadCpu();
    const clientBefore = process.cpuUsage();
    const serviceSeconds = await timed(async () => {
      answers = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => upload(service.url, token, `f${i}`)));
    });
    clearInterval(sampler);
    const serviceCpu = service.cpuSeconds() - cpuBefore;
    const threads = threadCpuSince(threadsBefore, service.threadCpu());
    const clientCpu = cpuSecondsSince(clientBefore);
    sample();
    const failed = answers.filter((a) => a.status !== 201 || a.body.size !== FILE_BYTES);
    if (failed.length > 0) throw new Error(`${failed.length} uploads failed: ${JSON.stringify(failed[0])}`);
    const plainSeconds = await timed(plainCopy);
    const bytes = CONCURRENCY * FILE_BYTES;
    const perMb = (seconds: number) => round((seconds * 1000) / (bytes / 1e6));
    const row: Row = {
      backend,
      uploads: CONCURRENCY,
      bytes,
      service_seconds: round(serviceSeconds),
      service_mb_per_s: round(mb(bytes, serviceSeconds)),
      plain_copy_seconds: round(plainSeconds),
      plain_copy_mb_per_s: round(mb(bytes, plainSeconds)),
      ratio: round(plainSeconds / serviceSeconds),
      rss_baseline_mib: round(low / 1024),
      rss_peak_growth_mib: round(growth / 1024),
      // The earlier definition (the run's highest reading over its lowest, in any order), for comparison.
      rss_peak_over_lowest_mib: round((peak - low) / 1024),
      service_cpu_ms_per_mb: round((serviceCpu * 1000) / (bytes / 1e6)),
      client_cpu_ms_per_mb: round((clientCpu * 1000) / (bytes / 1e6)),
      service_cpu_ms_per_mb_by_thread: Object.fromEntries(
        [...threads].filter(([, t]) => t.user + t.system > 0).map(([name, t]) => [name, { user: perMb(t.user), system: perMb(t.system) }]),
      ),
    };
    return row;
  } finally {
    await service.stop();
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

function cpuSecondsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
}

const dir = await mkdtemp(join(tmpdir(), 'bench-files-'));
const rows: Row[] = [];
try {
  // Local disk: the service writes DATA_DIR/files; the plain copy writes the same bytes to the same disk.
  const copies = join(dir, 'plain-copy');
  await mkdir(copies, { recursive: true });
  rows.push(
    await runBackend('local', dir, {}, async () => {
      await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => pipeline(Readable.from(chunksOf(Buffer.alloc(0), Buffer.alloc(0))), createWriteStream(join(copies, `f${i}`)))));
    }),
  );
  await rm(copies, { recursive: true, force: true });
  await mkdir(copies, { recursive: true });
  const durableSeconds = await timed(() =>
    Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => pipeline(Readable.from(chunksOf(Buffer.alloc(0), Buffer.alloc(0))), createWriteStream(join(copies, `f${i}`), { flush: true })))),
  );
  rows[0]!.durable_copy_mb_per_s = round(mb(rows[0]!.bytes, durableSeconds));
  rows[0]!.ratio_to_durable_copy = round(durableSeconds / rows[0]!.service_seconds);
  await rm(copies, { recursive: true, force: true });
  // The same uploads to a bare HTTP server writing the bodies to the same disk: what HTTP alone allows here.
  const sink = await startProcess(SINK, { SINK_DIR: join(dir, 'sink') });
  try {
    const warm = await upload(sink.url, '', 'warm-up');
    if (warm.status !== 201) throw new Error(`bare HTTP warm-up: ${warm.status}`);
    const sinkCpuBefore = sink.cpuSeconds();
    const sinkSeconds = await timed(async () => {
      const answers = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => upload(sink.url, '', `f${i}`)));
      if (answers.some((a) => a.status !== 201)) throw new Error('a bare HTTP upload failed');
    });
    const local = rows[0]!;
    local.bare_http_mb_per_s = round(mb(local.bytes, sinkSeconds));
    local.ratio_to_bare_http = round(sinkSeconds / local.service_seconds);
    local.bare_http_cpu_ms_per_mb = round(((sink.cpuSeconds() - sinkCpuBefore) * 1000) / (local.bytes / 1e6));
  } finally {
    await sink.stop();
    await rm(join(dir, 'sink'), { recursive: true, force: true });
  }

  // S3: s3rver on loopback; the plain copy puts the same bytes with the same client, size given.
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: join(dir, 's3'), configureBuckets: [{ name: 'bench-files', configs: [] }] });
  const { port } = (await s3.run()) as AddressInfo;
  try {
    const direct = new S3Storage({ bucket: 'bench-files', endPoint: '127.0.0.1', port, useSSL: false, region: 'us-east-1', accessKey: 'S3RVER', secretKey: 'S3RVER', pathStyle: true, spoolDir: join(dir, 'spool') });
    rows.push(
      await runBackend('s3', dir, { STORAGE_URL: `s3://S3RVER:S3RVER@bench-files?endpoint=http://127.0.0.1:${port}&region=us-east-1` }, async () => {
        await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => direct.client.putObject('bench-files', `plain/f${i}`, content, content.length)));
      }),
    );
  } finally {
    await s3.close();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

const header = ['backend', 'uploads', 'service MB/s', 'plain copy MB/s', 'service / copy', 'durable copy MB/s', 'service / durable copy', 'bare HTTP MB/s', 'service / bare HTTP', 'RSS baseline MiB', 'RSS peak growth MiB', 'CPU ms/MB: service', 'clients', 'bare HTTP'];
const pct = (ratio: number | undefined) => (ratio === undefined ? '-' : `${Math.round(ratio * 100)}%`);
const lines = rows.map((r) =>
  [r.backend, `${r.uploads} × 20 MiB`, r.service_mb_per_s, r.plain_copy_mb_per_s, pct(r.ratio), r.durable_copy_mb_per_s ?? '-', pct(r.ratio_to_durable_copy), r.bare_http_mb_per_s ?? '-', pct(r.ratio_to_bare_http), r.rss_baseline_mib, r.rss_peak_growth_mib, r.service_cpu_ms_per_mb, r.client_cpu_ms_per_mb, r.bare_http_cpu_ms_per_mb ?? '-'].map(String),
);
const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log([fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n'));
for (const r of rows) {
  const threads = Object.entries(r.service_cpu_ms_per_mb_by_thread).map(([name, t]) => `${name} ${t.user} + ${t.system}`);
  console.log(`${r.backend}: the service's CPU ms per MB by thread, user + system: ${threads.join(', ')}`);
}
writeResults('files', flatFigures(Object.fromEntries(rows.map(({ backend, ...row }) => [backend, row]))), {
  database: 'pglite',
  pglite: pgliteInDirectory ? 'a data directory' : 'in memory',
  concurrency: CONCURRENCY,
  file_bytes: FILE_BYTES,
});
