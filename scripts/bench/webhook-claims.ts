// What PostgreSQL spends on a webhook delivery's claim and outcome, alone: `npm run bench:webhook-claims`
// (DATABASE_URL required; everything happens in a schema of its own, bench_claims, dropped at the end).
// A backlog of N deliveries is claimed and recorded in batches of BATCH by one connection, with the
// dispatcher's statements (A), the same claim without FOR UPDATE SKIP LOCKED (A2), and a separate due-queue
// table whose rows an outcome deletes, so the delivery row updates in place (B); the figure is the server
// process's CPU per delivery (from /proc: PostgreSQL must run on this machine). A design named with
// `-stale` plans from statistics taken before the backlog was added; C is the dispatcher's claim as it runs
// it, with sorting priced out (src/db/due-order.ts), Cs the same statement with sorting allowed: C-stale
// beside Cs-stale is what pricing the sort out is worth.
//
//   DATABASE_URL=postgres://... BENCH_BATCH=64 BENCH_DESIGNS=A,B,A,B npm run bench:webhook-claims
//   DATABASE_URL=postgres://... BENCH_BATCH=256 BENCH_DESIGNS=Cs-stale,C-stale,C npm run bench:webhook-claims
import { readFileSync } from 'node:fs';
import pg from 'pg';

const N = Number(process.env.BENCH_BACKLOG ?? 16000);
const BATCH = Number(process.env.BENCH_BATCH ?? 256);
if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is required');
const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
await c.connect();
await c.query('drop schema if exists bench_claims cascade; create schema bench_claims; set search_path = bench_claims');
const pid = (await c.query('select pg_backend_pid() as p')).rows[0].p;
const cpu = () => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const body = 'x'.repeat(550);
async function setup(design: string) {
  await c.query(`drop table if exists d, q, w cascade; create table w (id text primary key, enabled boolean not null default true, url text, secret text, previous_secret text, previous_secret_expires_at timestamptz, failing_since timestamptz);
  insert into w (id, url, secret) values ('w1', 'http://x', 's');
  create table d (id text primary key, tenant_id text not null, webhook_id text not null references w(id), event_id text not null, event_type text not null, body text not null,
    status text not null default 'pending', attempts integer not null default 0, retry_step integer not null default 0, next_attempt_at timestamptz, locked_until timestamptz, lock_token text,
    last_status_code integer, last_error text, last_attempt_at timestamptz, created_at timestamptz not null default now(), delivered_at timestamptz, unique (webhook_id, event_id)) with (fillfactor = 50);
  create index d_list on d (webhook_id, created_at desc, id desc);`);
  if (!design.startsWith('B')) await c.query(`create index d_due on d (next_attempt_at) where status = 'pending'`);
  else await c.query(`create table q (delivery_id text primary key, webhook_id text not null, next_attempt_at timestamptz not null, locked_until timestamptz, lock_token text) with (fillfactor = 50); create index q_due on q (next_attempt_at);`);
  // Autovacuum must not analyze the backlog meanwhile: a stale design would read fresh statistics part way.
  if (design.endsWith('-stale')) await c.query('alter table d set (autovacuum_enabled = false); analyze d, w');
  await c.query(`insert into d (id, tenant_id, webhook_id, event_id, event_type, body, next_attempt_at) select lpad(i::text, 12, '0'), 't', 'w1', 'e' || i, 'message.created', $1, now() from generate_series(1, ${N}) i`, [body]);
  if (design.startsWith('B')) await c.query(`insert into q select id, webhook_id, next_attempt_at from d`);
  // -stale: the statistics are from before the backlog (analyzed empty), as after a burst into a table
  // that autovacuum has not analyzed since, or on a fresh database.
  if (!design.endsWith('-stale')) await c.query('vacuum analyze');
}
const claimA = `update d set locked_until = now() + interval '15 s', lock_token = $2, attempts = d.attempts + 1, last_attempt_at = now() from w
  where w.id = d.webhook_id and d.id in (select d.id from d join w on w.id = d.webhook_id where d.status = 'pending' and d.next_attempt_at <= now() and (d.locked_until is null or d.locked_until < now()) and w.enabled order by d.next_attempt_at limit $1 for update of d skip locked)
  returning d.id, d.tenant_id, d.webhook_id, d.event_id, d.body, d.retry_step, w.url, w.secret, case when w.previous_secret_expires_at > now() then w.previous_secret end as previous_secret`;
const doneA = `with done as (update d set status = 'succeeded', next_attempt_at = null, locked_until = null, lock_token = null, last_status_code = v.status_code, last_error = null, delivered_at = now()
  from unnest($1::text[], $2::text[], $3::integer[]) as v (id, lock_token, status_code) where d.id = v.id and d.lock_token = v.lock_token returning d.webhook_id),
  recovered as (update w set failing_since = null where id in (select webhook_id from done) and failing_since is not null) select count(*)::integer as written from done`;
const claimA2 = claimA.replace(' for update of d skip locked', '');
// The claim as the dispatcher sends it (src/webhooks/webhook.repository.ts, claimDueDeliveries).
const claimC = `with claimed as (update d set locked_until = now() + interval '15 s', lock_token = $2, attempts = d.attempts + 1, last_attempt_at = now()
  where d.id = any(array(select d.id from d join w on w.id = d.webhook_id where d.status = 'pending' and d.next_attempt_at <= now() and (d.locked_until is null or d.locked_until < now()) and w.enabled order by d.next_attempt_at limit $1 for update of d skip locked))
  returning d.id, d.tenant_id, d.webhook_id, d.event_id, d.body, d.retry_step)
  select c.*, w.url, w.secret, case when w.previous_secret_expires_at > now() then w.previous_secret end as previous_secret from claimed c join w on w.id = c.webhook_id`;
const claimB = `with c as (update q set locked_until = now() + interval '15 s', lock_token = $2 from w
  where w.id = q.webhook_id and q.delivery_id in (select q.delivery_id from q join w on w.id = q.webhook_id where q.next_attempt_at <= now() and (q.locked_until is null or q.locked_until < now()) and w.enabled order by q.next_attempt_at limit $1 for update of q skip locked)
  returning q.delivery_id, w.url, w.secret, case when w.previous_secret_expires_at > now() then w.previous_secret end as previous_secret)
  select d.id, d.tenant_id, d.webhook_id, d.event_id, d.body, d.retry_step, c.url, c.secret, c.previous_secret from c join d on d.id = c.delivery_id`;
const doneB = `with gone as (delete from q using unnest($1::text[], $2::text[], $3::integer[]) as v (id, lock_token, status_code) where q.delivery_id = v.id and q.lock_token = v.lock_token returning q.delivery_id, v.status_code),
  done as (update d set status = 'succeeded', attempts = d.attempts + 1, last_attempt_at = now(), last_status_code = gone.status_code, last_error = null, delivered_at = now() from gone where d.id = gone.delivery_id returning d.webhook_id),
  recovered as (update w set failing_since = null where id in (select webhook_id from done) and failing_since is not null) select count(*)::integer as written from done`;
for (const design of (process.env.BENCH_DESIGNS ?? 'A,A2,B,A,A2,B').split(',')) {
  await setup(design);
  const before = cpu(); const t0 = performance.now(); let total = 0; let claimCpu = 0;
  for (;;) {
    const token = Math.random().toString(36);
    await c.query('begin');
    const c1 = cpu();
    // C: the dispatcher's claim, in due order as it runs it (src/db/due-order.ts: sorting priced out); Cs: the
    // same statement with sorting allowed.
    if (design.startsWith('C') && !design.startsWith('Cs')) await c.query('set local enable_sort = off');
    const claim = design.startsWith('A2') ? claimA2 : design.startsWith('A') ? claimA : design.startsWith('B') ? claimB : claimC;
    const { rows } = await c.query<{ id: string }>(claim, [BATCH, token]);
    await c.query('commit');
    if (rows.length === 0) break;
    claimCpu += cpu() - c1;
    await c.query('begin');
    const r = await c.query<{ written: number }>(design.startsWith('B') ? doneB : doneA, [rows.map((x) => x.id), rows.map(() => token), rows.map(() => 200)]);
    await c.query('commit');
    total += r.rows[0]!.written;
  }
  const ms = performance.now() - t0;
  console.log(
    `${design.padEnd(7)} ${total} deliveries, batches of ${BATCH}: PostgreSQL CPU µs per delivery ${(((cpu() - before) * 1e6) / total).toFixed(1)} (the claim ${((claimCpu * 1e6) / total).toFixed(1)}), wall µs per delivery ${((ms * 1000) / total).toFixed(1)}`,
  );
}
await c.query('drop schema bench_claims cascade');
await c.end();
