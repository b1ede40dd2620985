// `npm run bench:docs` writes docs/benchmarks.md from the figures the benchmarks recorded
// (scripts/bench/results/*.json): each goal, the latest figure (the median of the runs on record) and the
// command that measures it. `--check` (part of `npm run check`) fails when the page is not what the
// results say, so the page cannot drift from them; `--root DIR` works on a copy of the project.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describeModel } from './capacity-model.ts';
import { type Run, runsOf } from './results.ts';

type Unit = 'ratio' | 'times' | 'share' | 'ms' | 'MiB' | 'KiB' | 'people' | 'count';

interface Goal {
  what: string;
  /** Results files (scripts/bench/results/<name>.json) holding the figure; one line per file and database. */
  benches: string[];
  /** The figure's name; the first one a run has counts (a figure renamed keeps its older runs). */
  figure: string | string[];
  /** When several figures are named with `of`, the worst of them counts. */
  of?: 'worst' | 'best';
  target: { at: 'least' | 'most'; value: number };
  unit: Unit;
  command: string;
  /** Only the runs on this database (a goal that differs by database). */
  database?: 'postgres' | 'pglite';
}

const GOALS: Goal[] = [
  ...(['10k', '1M'] as const).flatMap((size): Goal[] => [
    { what: `list page, ${size} conversations, to the ideal server`, benches: ['conversations', 'conversations-pglite'], figure: `list.${size}.validation_on.ratio_of_ideal`, target: { at: 'least', value: 0.8 }, unit: 'ratio', command: 'npm run bench:conversations' },
    { what: `list filtered by status, ${size}, to the ideal server`, benches: ['conversations', 'conversations-pglite'], figure: `listOpen.${size}.validation_on.ratio_of_ideal`, target: { at: 'least', value: 0.8 }, unit: 'ratio', command: 'npm run bench:conversations' },
    { what: `GET one conversation, ${size}, to the ideal server`, benches: ['conversations', 'conversations-pglite'], figure: `get.${size}.validation_on.ratio_of_ideal`, target: { at: 'least', value: 0.85 }, unit: 'ratio', command: 'npm run bench:conversations' },
    { what: `POST a message, ${size}, to the ideal server`, benches: ['conversations', 'conversations-pglite'], figure: `post.${size}.validation_on.ratio_of_ideal`, target: { at: 'least', value: 0.85 }, unit: 'ratio', command: 'npm run bench:conversations' },
    { what: `response validation's cost, ${size} (the dearest of the four endpoints)`, benches: ['conversations', 'conversations-pglite'], figure: ['list', 'listOpen', 'get', 'post'].map((e) => `${e}.${size}.validation_cost`), of: 'worst', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:conversations' },
    // Internals of pg and the validator are replaced only where that buys over a tenth of an endpoint's throughput (docs/architecture.md).
    { what: `what the dependency patches add, ${size} (the endpoint they help most)`, benches: ['conversations', 'conversations-pglite'], figure: ['list', 'listOpen', 'get', 'post'].map((e) => `${e}.${size}.patches_gain`), of: 'best', target: { at: 'least', value: 0.1 }, unit: 'share', command: 'npm run bench:conversations' },
  ]),
  { what: 'messages/s with 100 agent sockets open, to the same sends with none', benches: ['messages'], figure: 'full.ratio_of_no_sockets', target: { at: 'least', value: 0.8 }, unit: 'ratio', command: 'npm run bench:messages' },
  { what: 'from a send\'s answer to the last of 100 sockets, p99, at half the full rate', benches: ['messages'], figure: 'half.delivery_p99_ms', target: { at: 'most', value: 100 }, unit: 'ms', command: 'npm run bench:messages' },
  { what: 'one event to 1,000 sockets, p50, to a bare `ws` server', benches: ['fanout'], figure: ['1000.pair_ratio_p50', '1000.ratio_p50'], target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:fanout' },
  { what: 'one event to 10,000 sockets, p50, to a bare `ws` server', benches: ['fanout'], figure: ['10000.pair_ratio_p50', '10000.ratio_p50'], target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:fanout' },
  // The heap (with external memory), not RSS: the service's RSS before the sockets already holds what its setup (thousands of widget sessions) grew and a collection does not give back, so its growth undercounts the sockets.
  { what: '50,000 idle sockets, agents and visitors, memory per socket (heap and external, after a GC) to a bare `ws` server holding as many (fewer where the open-file limit is lower: the results say how many)', benches: ['sockets'], figure: 'memory.heap_ratio', target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:sockets' },
  { what: 'one event to all of those sockets, p99, to the bare server\'s broadcast', benches: ['sockets'], figure: 'fanout.ratio_p99', target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:sockets' },
  { what: 'webhook deliveries/s of one instance, to a bare sign-and-post loop', benches: ['webhooks'], figure: 'ratio', target: { at: 'least', value: 0.7 }, unit: 'ratio', command: 'npm run bench:webhooks' },
  { what: 'webhook lag from commit to delivery, p99, at half the send rate', benches: ['webhooks'], figure: 'lag_p99_ms', target: { at: 'most', value: 500 }, unit: 'ms', command: 'npm run bench:webhooks' },
  { what: '50 uploads of 20 MiB to local disk, to a plain copy of the bytes', benches: ['files'], figure: 'local.ratio', target: { at: 'least', value: 0.7 }, unit: 'ratio', command: 'npm run bench:files' },
  { what: 'the same to S3, to the client\'s own puts', benches: ['files'], figure: 's3.ratio', target: { at: 'least', value: 0.7 }, unit: 'ratio', command: 'npm run bench:files' },
  { what: 'the service\'s memory growth during the uploads, local disk', benches: ['files'], figure: 'local.rss_peak_growth_mib', target: { at: 'most', value: 100 }, unit: 'MiB', command: 'npm run bench:files' },
  { what: 'the service\'s memory growth during the uploads, S3', benches: ['files'], figure: 's3.rss_peak_growth_mib', target: { at: 'most', value: 100 }, unit: 'MiB', command: 'npm run bench:files' },
  { what: 'API reference: the first operation readable, from the request, in chromium', benches: ['reference'], figure: 'new.first_operation_ms', target: { at: 'most', value: 1500 }, unit: 'ms', command: 'npm run bench:reference' },
  { what: 'API reference: that time, to the page it replaced (Swagger UI) in the same run', benches: ['reference'], figure: 'ratio.first_operation_new_of_old', target: { at: 'most', value: 1 / 3 }, unit: 'ratio', command: 'npm run bench:reference' },
  { what: 'API reference: script the browser receives, compressed', benches: ['reference'], figure: 'new.script_kib', target: { at: 'most', value: 600 }, unit: 'KiB', command: 'npm run bench:reference' },
  { what: 'first start on the embedded default, to PGlite creating a directory', benches: ['start'], figure: 'ratio.first_start_of_pglite_create_to_answer', target: { at: 'most', value: 1.25 }, unit: 'times', command: 'npm run bench:start' },
  { what: 'restart on the embedded default, to a process that only opens the same PGlite directory', benches: ['start'], figure: 'ratio.restart_of_pglite_reopen_same_dir', target: { at: 'most', value: 2 }, unit: 'times', command: 'npm run bench:start' },
  { what: '1,000 conversations at once over 50 agents, two instances: all assigned after the last arrival', benches: ['routing'], figure: 'assigned_after_last_arrival_ms', target: { at: 'most', value: 2000 }, unit: 'ms', command: 'npm run bench:routing' },
  { what: 'the widget start\'s answer (p50) during that burst, routing off to on', benches: ['routing'], figure: 'start_ratio_off_to_on', target: { at: 'least', value: 0.9 }, unit: 'ratio', command: 'npm run bench:routing' },
  { what: 'the team app\'s first load of the inbox: its JavaScript, gzipped, to a budget of 150 KB', benches: ['app'], figure: 'first_load.js_gzip_share_of_budget', target: { at: 'most', value: 1 }, unit: 'share', command: 'npm run bench:app' },
  { what: 'the team app\'s first conversation list shown, to the end of the API call that feeds it (same load)', benches: ['app'], figure: 'first_load.shown_of_api', target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:app' },
  { what: 'the same from the call\'s start: list shown − call start, to the call\'s own duration (same load)', benches: ['app'], figure: 'first_load.shown_after_start_of_api', target: { at: 'most', value: 1.5 }, unit: 'times', command: 'npm run bench:app' },
  { what: 'the tab\'s renderer process (PSS), scrolling 10,000 conversations and a 5,000-message thread to their ends (150 MB)', benches: ['app'], figure: 'scroll.renderer_pss_peak_mib', target: { at: 'most', value: 143 }, unit: 'MiB', command: 'npm run bench:app' },
  { what: 'the tab\'s JS heap alone, the same scrolling (150 MB)', benches: ['app'], figure: 'scroll.heap_peak_mib', target: { at: 'most', value: 143 }, unit: 'MiB', command: 'npm run bench:app' },
  { what: 'a visitor\'s message in the agent\'s inbox DOM, p99, to a plain socket client\'s delivery (same messages)', benches: ['app'], figure: 'delivery.dom_of_ws_p99', target: { at: 'most', value: 1.2 }, unit: 'times', command: 'npm run bench:app' },
  { what: 'simultaneous people one instance serves, the capacity model (PostgreSQL + Redis)', benches: ['capacity'], database: 'postgres', figure: 'capacity.people', target: { at: 'least', value: 2000 }, unit: 'people', command: 'npm run bench:capacity' },
  { what: 'simultaneous people one instance serves, the capacity model (the embedded default)', benches: ['capacity'], database: 'pglite', figure: 'capacity.people', target: { at: 'least', value: 500 }, unit: 'people', command: 'npm run bench:capacity' },
  { what: 'soak at half the capacity: RSS, the last ten minutes to minutes 10–20', benches: ['capacity-soak'], figure: 'rss_growth_share', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:capacity -- --soak' },
  { what: 'soak at half the capacity: the worst p99, the last ten minutes to minutes 10–20', benches: ['capacity-soak'], figure: 'p99_growth_share', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:capacity -- --soak' },
  { what: 'soak at half the capacity: failed requests and deliveries', benches: ['capacity-soak'], figure: 'errors', target: { at: 'most', value: 0 }, unit: 'count', command: 'npm run bench:capacity -- --soak' },
  { what: 'sends/s through the balancer, three instances and PgBouncer, to one instance on PostgreSQL alone', benches: ['balancer'], figure: 'ratio', target: { at: 'least', value: 1.0 }, unit: 'ratio', command: 'npm run bench:balancer' },
  { what: 'reports: the 30-day summary, p99, a tenant seeded towards 1,000,000 conversations (the results say the scale reached), past days read through their caches', benches: ['reports'], figure: 'summary_30d_warm.p99_ms', target: { at: 'most', value: 200 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'reports: the 30-day daily series, p99, same tenant, past days through their caches', benches: ['reports'], figure: 'series_30d_daily_warm.p99_ms', target: { at: 'most', value: 200 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'search for an order number, p99, same tenant (towards 10,000,000 messages)', benches: ['reports'], figure: 'search_order_number.p99_ms', target: { at: 'most', value: 300 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'search for the first letters of many words (w31: about 4% of the messages), p99, same tenant', benches: ['reports'], figure: 'search_word.p99_ms', target: { at: 'most', value: 300 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'search for words in most messages or every contact (about, parcel, customer, ...), p99, same tenant', benches: ['reports'], figure: 'search_common.p99_ms', target: { at: 'most', value: 300 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'search for a contact by the start of their e-mail address, p99, same tenant', benches: ['reports'], figure: 'search_contact.p99_ms', target: { at: 'most', value: 300 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'reports: the 30-day summary, p99, the first read of the range (its caches emptied before each read)', benches: ['reports'], figure: 'summary_30d_first_read.p99_ms', target: { at: 'most', value: 200 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'reports: the 30-day daily series, p99, the first read of the range', benches: ['reports'], figure: 'series_30d_daily_first_read.p99_ms', target: { at: 'most', value: 200 }, unit: 'ms', command: 'npm run bench:reports' },
  { what: 'what writing report facts costs message sends: throughput lost, from the CPU per send (service, client and PostgreSQL), facts on to off in the same run', benches: ['reports-writes'], figure: 'writes.send_cpu_cost_of_facts', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:reports -- --writes' },
  { what: 'what writing report facts costs closes: the same, per close and reopen', benches: ['reports-writes'], figure: 'writes.close_cpu_cost_of_facts', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:reports -- --writes' },
  { what: 'what writing report facts costs message sends, from the rates (both settings in turns; moves with the machine\'s other load)', benches: ['reports-writes'], figure: 'writes.send_cost_of_facts', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:reports -- --writes' },
  { what: 'what writing report facts costs closes, from the rates', benches: ['reports-writes'], figure: 'writes.close_cost_of_facts', target: { at: 'most', value: 0.1 }, unit: 'share', command: 'npm run bench:reports -- --writes' },
];

const BENCHMARKS: { command: string; measures: string }[] = [
  { command: 'bench:conversations', measures: 'list (with and without a status filter), get and send at 10k and 1M conversations, with response validation on and off, as ratios of an ideal node:http + pg server doing only the work in one transaction, the servers taking turns (PostgreSQL with `DATABASE_URL`, else PGlite; `BENCH_ENDPOINTS` sets the order)' },
  { command: 'bench:messages', measures: '100 agent sockets, senders posting as fast as taken: messages/s and the time from a send\'s answer to the last socket\'s frame, in phases alternating with sends to a tenant with no socket open (`BENCH_PAIRS`); then at half that rate' },
  { command: 'bench:fanout', measures: '1,000 and 10,000 sockets of one tenant: time until the last has an event, beside a bare `ws` server broadcasting the same frame to as many sockets, timed in turns event by event after a warm-up; memory per connection and CPU per event' },
  { command: 'bench:sockets', measures: 'N sockets on one instance (`BENCH_SOCKETS`, default 50,000, lowered to what the open-file limit allows, said at the start), half one login\'s agent sockets and half one visitor\'s, opened by client processes from several loopback addresses, beside a bare `ws` server holding as many: memory per socket after a garbage collection (RSS, and heap plus external), and an agent\'s message in the visitor\'s conversation to all N, p50 and p99, timed in turns with the bare server\'s broadcast of the same frame' },
  { command: 'bench:webhooks', measures: 'a backlog of deliveries (`BENCH_BACKLOG`, default 4000) drained by one instance into a loopback receiver, beside a bare loop signing and posting the same bodies (`BENCH_BARE_CLIENT=undici` to post as the service does), in turns; then the lag from commit to delivery at half the send rate; CPU per delivery of each process' },
  { command: 'bench:files', measures: '50 concurrent 20 MiB uploads to local disk and to S3 (s3rver), beside a plain copy of the same bytes and a bare HTTP server writing them; the service\'s memory growth and CPU per MB by thread' },
  { command: 'bench:start', measures: 'start to healthy on the embedded default: first start with and without the template, and restart, beside PGlite creating a directory and a process that only opens the restarted service\'s directory (as the service opens it, pg_trgm included) and runs one query; each timed from spawn to its first answer' },
  { command: 'bench:send-latency', measures: 'one message sent at a time on an idle service: p10, p50, p90 of the send and the service\'s CPU per send' },
  { command: 'bench:login', measures: 'logins per second, and a cheap GET\'s p99 with and without logins running' },
  { command: 'bench:heartbeat', measures: 'the event loop\'s time for one WebSocket heartbeat with N sockets of one login and N visitors of one tenant (the database answered at once)' },
  { command: 'bench:route-lookup', measures: 'the cost of finding a request\'s operation: express-openapi-validator\'s own scan beside the app\'s lookup by segment count' },
  { command: 'bench:feed-read', measures: 'PostgreSQL\'s CPU and the wall time of one read of a tenant\'s event feed, its statement named and not, in turns (`DATABASE_URL`)' },
  { command: 'bench:webhook-claims', measures: 'PostgreSQL\'s CPU per webhook delivery for the claim and the outcome alone, in batches of `BENCH_BATCH`, beside alternative designs (`BENCH_DESIGNS`; `DATABASE_URL`; a schema of its own, dropped at the end)' },
  { command: 'bench:routing', measures: '1,000 visitors starting a conversation at once over two instances (PostgreSQL + Redis, `DATABASE_URL` and `REDIS_URL`) with 50 agents online, capacity 20 each, least loaded: the time from the last start\'s answer until all are assigned, and the start\'s answer time with routing on and off, in alternating pairs (`BENCH_PAIRS`, at least 5); checks that nobody went over capacity' },
  { command: 'bench:app', measures: 'the team app in chromium against the service on PostgreSQL (`DATABASE_URL`), a tenant of 10,000 conversations and a 5,000-message thread seeded with SQL: the first load\'s JavaScript and the time its list shows beside its API call\'s end, the JS heap and the tab\'s renderer process (PSS and RSS from /proc) while scrolling the list and the thread to their ends, and a visitor\'s message in the inbox DOM beside a plain socket client, over `BENCH_RUNS` (at least 5) runs of `BENCH_MESSAGES` (at least 100)' },
  { command: 'bench:probe', measures: 'the service alone, one endpoint at a time (`PROBE_ENDPOINTS`): req/s and CPU per request, with any setting switched by `PROBE_ENV` and, on PostgreSQL, `PROBE_SEED=n` conversations' },
  { command: 'bench:reference', measures: 'the API reference (Redoc, rendered on the server) beside the Swagger UI page it replaced, served by one process: the first operation\'s link opened in a fresh chromium context, the time until its summary is visible (from the request, recorded by the page), and the script received on the wire; old and new alternating (`BENCH_RUNS`, default 7), medians' },
  { command: 'bench:reports', measures: 'a tenant seeded with SQL for `BENCH_SEED_SECONDS` (default 600) towards 1,000,000 conversations and 10,000,000 messages, newest first, so the last 30 days have the density of the full tenant: the 30-day summary and daily series (per-day rollups), the same from the facts, and searches, p50 and p99; then sends and closes with report facts on and off in turns, the tables they update vacuumed before each phase (`DATABASE_URL`, a database of its own); `-- --writes`: the sends and closes alone, on the tenant an earlier run seeded with `BENCH_REUSE=1` (every run\'s write figures also go to `results/reports-writes.json`)' },
  { command: 'bench:capacity', measures: 'the capacity model (below) ramped until a step fails: simultaneous people, messages/s, and the service\'s CPU, event loop and memory, PostgreSQL\'s and the load generator\'s CPU at the last passing step; PostgreSQL + Redis with `DATABASE_URL` and `REDIS_URL`, else the embedded default; `--soak` (or `BENCH_SOAK_MINUTES`) the soak at half the capacity on record' },
  { command: 'bench:balancer', measures: 'the stack of `npm run stack` (HAProxy, three instances, PgBouncer in transaction mode, a primary with a streaming standby, Redis) beside one instance alone on the same primary with a Redis of its own: `BENCH_SENDERS` (default 24) senders posting messages with an Idempotency-Key for `BENCH_SECONDS` (default 10) after a warm-up, the two in alternating pairs (`BENCH_PAIRS`, default 5); sends/s, p50 and p99, and the CPU seconds of every part (balancer, each instance, pooler, PostgreSQL, Redis, the load generator) from /proc' },
  { command: 'bench:compare a.json b.json', measures: 'the change of every figure between two results files (the newest run of each)' },
];

const DATABASES: Record<string, string> = { postgres: 'PostgreSQL', pglite: 'PGlite' };

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function show(value: number, unit: Unit): string {
  switch (unit) {
    case 'ratio':
      return value.toFixed(2);
    case 'times':
      return `${value.toFixed(2)}x`;
    case 'share':
      return `${(value * 100).toFixed(1)}%`;
    case 'ms':
      return `${Number(value.toPrecision(3))} ms`;
    case 'MiB':
      return `${Math.round(value)} MiB`;
    case 'KiB':
      return `${Math.round(value)} KiB`;
    case 'people':
      return `${Math.round(value).toLocaleString('en-US')} people`;
    case 'count':
      return String(Math.round(value));
  }
}

/** A run's figures one by one: a run that recorded each of its repetitions (`per_run`) counts as that many. */
const repetitions = (run: Run): Run[] => (Array.isArray(run.per_run) ? (run.per_run as Run['figures'][]).map((figures) => ({ ...run, figures })) : [run]);

/** The figure of one run for a goal, or undefined when the run did not measure it. */
function figureOf(run: Run, goal: Goal): number | undefined {
  const names = typeof goal.figure === 'string' ? [goal.figure] : goal.figure;
  if (goal.of) {
    const values = names.map((n) => run.figures[n]).filter((v): v is number => typeof v === 'number');
    if (values.length === 0) return undefined;
    const lowest = (goal.of === 'worst') === (goal.target.at === 'least');
    return lowest ? Math.min(...values) : Math.max(...values);
  }
  for (const name of names) if (typeof run.figures[name] === 'number') return run.figures[name];
  return undefined;
}

export function render(results: Map<string, Run[]>): string {
  const rows: string[] = [];
  for (const goal of GOALS) {
    const target = `${goal.target.at === 'least' ? '≥' : '≤'} ${show(goal.target.value, goal.unit)}`;
    let lines = 0;
    for (const bench of goal.benches) {
      const runs = results.get(bench) ?? [];
      for (const database of [...new Set(runs.map((r) => r.database))].sort()) {
        if (goal.database && database !== goal.database) continue;
        const measured = runs.filter((r) => r.database === database).flatMap(repetitions).flatMap((r) => {
          const value = figureOf(r, goal);
          return value === undefined ? [] : [{ value, date: r.date.slice(0, 10) }];
        });
        if (measured.length === 0) continue;
        const value = median(measured.map((m) => m.value));
        const met = goal.target.at === 'least' ? value >= goal.target.value : value <= goal.target.value;
        const dates = [...new Set(measured.map((m) => m.date))];
        const onRecord = `${measured.length === 1 ? 'one run' : `median of ${measured.length} runs`}, ${dates.length === 1 ? dates[0] : `${dates[0]} to ${dates.at(-1)}`}`;
        rows.push(`| ${goal.what} | ${target} | ${DATABASES[database] ?? database} | **${show(value, goal.unit)}** | ${met ? 'met' : 'not met'} | ${onRecord} | \`${goal.command}\` |`);
        lines++;
      }
    }
    if (lines === 0) rows.push(`| ${goal.what} | ${target} | | no run on record | | | \`${goal.command}\` |`);
  }
  return `# Benchmarks

<!-- Generated by \`npm run bench:docs\` from scripts/bench/results/*.json: do not edit. \`npm run check\` fails when
this page is not what the results say. -->

Each goal, the latest figure on record and the command that measures it. Every benchmark writes its figures
to \`scripts/bench/results/<name>.json\`, which keeps its last runs on each database; the figure here is their
median (a run that records each of its repetitions, as bench:app does, counts each). Ratios are against a baseline measured in the same run on the same machine (the development
machine has two cores, shared by the load generator, the database and every server), so compare ratios
across machines, not rates. After a change, run the benchmark a few times and then \`npm run bench:docs\`;
\`npm run bench:compare before.json after.json\` shows what the change did to every figure.

## Goals

| goal | target | database | figure | | on record | command |
|---|---|---|---|---|---|---|
${rows.join('\n')}

## The benchmarks

Each is \`npm run <command>\`; most take \`DATABASE_URL\` (PostgreSQL) and \`BENCH_CPU_PROF=dir\` (CPU profiles).

| command | measures | on record |
|---|---|---|
${BENCHMARKS.map((b) => {
  const name = b.command.replace(/^bench:/, '').split(' ')[0]!;
  const files = [...results.keys()].filter((k) => k === name || k.startsWith(`${name}-`)).sort();
  const record = files.map((f) => `\`results/${f}.json\``).join(', ') || '-';
  return `| \`${b.command}\` | ${b.measures} | ${record} |`;
}).join('\n')}

${balancerCpu(results.get('balancer') ?? [])}${describeModel()}`;
}

/**
 * Where bench:balancer's CPU went in its latest run: each part's CPU seconds per phase (medians of its
 * pairs), the stack's beside the one instance's. Its goal is a ratio of sends/s; this says why it is what it is.
 */
function balancerCpu(runs: Run[]): string {
  const run = runs.at(-1);
  if (!run) return '';
  const parts = [...new Set(Object.keys(run.figures).filter((k) => /^(stack|single)\.cpu_s\./.test(k)).map((k) => k.split('.').slice(2).join('.')))];
  if (parts.length === 0) return '';
  const cell = (side: string, part: string) => {
    const v = run.figures[`${side}.cpu_s.${part}`];
    return typeof v === 'number' ? v.toFixed(2) : '';
  };
  const perSend = (side: string) => {
    const cpu = run.figures[`${side}.cpu_s.postgres_primary`];
    const rate = run.figures[`${side}.sends_per_s`];
    const seconds = (run as { seconds?: number }).seconds ?? 10;
    return typeof cpu === 'number' && typeof rate === 'number' && rate > 0 ? (((cpu / (rate * seconds)) * 1000).toFixed(1)) : '';
  };
  return `## Where the balancer's CPU goes

\`bench:balancer\`'s latest run (${run.date.slice(0, 10)}): CPU seconds of each part in a phase, the stack's phase beside
the one instance's (each the median of its pairs), and sends/s. Both cores are busy in both phases; PostgreSQL's
CPU per send is the difference that matters (PgBouncer before 1.21 keeps no prepared statements, so the stack's
instances send every statement unprepared).

| part | stack | one instance |
|---|---|---|
${parts.map((p) => `| ${p.replaceAll('_', ' ')} | ${cell('stack', p)} | ${cell('single', p)} |`).join('\n')}
| sends/s | ${run.figures['stack.sends_per_s'] ?? ''} | ${run.figures['single.sends_per_s'] ?? ''} |
| PostgreSQL primary, CPU ms per send | ${perSend('stack')} | ${perSend('single')} |

`;
}

export function readResults(root: string): Map<string, Run[]> {
  const dir = join(root, 'scripts/bench/results');
  const results = new Map<string, Run[]>();
  if (!existsSync(dir)) return results;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    results.set(file.slice(0, -'.json'.length), runsOf(JSON.parse(readFileSync(join(dir, file), 'utf8'))));
  }
  return results;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const root = resolve(rootAt >= 0 ? args[rootAt + 1]! : new URL('../..', import.meta.url).pathname);
  const page = join(root, 'docs/benchmarks.md');
  const text = render(readResults(root));
  if (args.includes('--check')) {
    if (!existsSync(page) || readFileSync(page, 'utf8') !== text) {
      console.error('docs/benchmarks.md is out of date with scripts/bench/results/: run npm run bench:docs and commit it');
      process.exit(1);
    }
  } else {
    writeFileSync(page, text);
    console.log(`wrote ${page}`);
  }
}
