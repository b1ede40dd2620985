// `npm run bench:reports` (PostgreSQL: DATABASE_URL, a database of its own; it disables triggers while
// seeding). Issue 44's goals:
// - a tenant with (up to) 1,000,000 conversations and 10,000,000 messages, seeded in bulk with
//   generate_series for at most BENCH_SEED_SECONDS (default 600; the scale reached is recorded): the
//   30-day summary and the daily series, p99 (< 200 ms; read from the per-day rollups), and a search for
//   an order number, p99 (< 300 ms); the same summary through the facts (another time zone) for scale;
// - what writing the facts costs a message send (a visitor's message and a member's reply) and a close
//   (close, then reopen), facts on and off in turns in the same run (<= 10%). Off: the hooks of
//   src/reports/facts.ts and the facts' triggers are turned off. These figures also go to
//   results/reports-writes.json, where `-- --writes` (the reads left out) records them alone.
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { sql } from 'kysely';
import pino from 'pino';
import { createApp } from '../../src/app.ts';
import { PasswordHasher } from '../../src/auth/password.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { setFactHooksForBenchmark } from '../../src/reports/facts.ts';
import { foldPendingFacts } from '../../src/reports/report.repository.ts';
import { type Figures, writeResults } from './results.ts';
import { databaseCpuSeconds } from './support.ts';

const JWT_SECRET = 'bench-secret-that-is-long-enough-for-hs256-0123456789';
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl?.startsWith('postgres')) throw new Error('bench:reports runs on PostgreSQL: set DATABASE_URL (a database of its own)');
const TARGET_CONVERSATIONS = Number(process.env.BENCH_CONVERSATIONS ?? 1_000_000);
const MESSAGES_PER_CONVERSATION = 10;
const SEED_SECONDS = Number(process.env.BENCH_SEED_SECONDS ?? 600);
const BATCH = Number(process.env.BENCH_BATCH ?? 25_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 6_000);
// Only what the facts cost (results/reports-writes.json): five runs of it take minutes, not the reads' half hour.
const WRITES_ONLY = process.argv.includes('--writes');
// Facts on and off in turns, balanced (each setting as often first as second), in short phases: the load
// of whatever else runs on the machine changes over tens of seconds, by more than the facts cost, and many
// short phases share that drift out between both settings more evenly than a few long ones.
const TURNS = ['on', 'off', 'off', 'on', 'on', 'off', 'off', 'on', 'on', 'off', 'off', 'on'] as const;
const SPAN_DAYS = 365;
const ZONE = 'Europe/Berlin';

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

// The triggers the facts and their rollups live by (migrations 2026-11-30T09-00-00, -09-30-00, -10-00-00,
// 2026-12-01T09-00-00, 2026-12-06T09-00-00).
const FACT_TRIGGERS: [string, string][] = [
  ['conversations', 'conversation_facts_start'],
  ['messages', 'conversation_facts_visitor'],
  ['messages', 'conversation_facts_reply'],
  ['conversations', 'conversation_facts_assigned'],
  ['surveys', 'report_facts_csat'],
  ['report_facts', 'report_facts_rollup'],
  ['conversation_labels', 'conversation_labels_rollup'],
];
const factTriggers = async (db: Database, on: boolean) => {
  for (const [table, trigger] of FACT_TRIGGERS) await sql.raw(`ALTER TABLE ${table} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${trigger}`).execute(db.db);
};

/**
 * Conversations `from`..`to` (newest first, spread over SPAN_DAYS before now): closed, assigned to the
 * owner, a contact each, ten messages each (visitor and member in turns, an order number and common words to search),
 * their facts and state, one in ten labelled. Triggers are off while seeding: each batch adds its facts to
 * the rollups in one set-based statement (what the triggers would have added one by one).
 */
async function seedBatch(db: Database, tenantId: string, ownerId: string, labelId: string, from: number, to: number, total: number) {
  const uuidish = (e: string) => `substr(${e},1,8)||'-'||substr(${e},9,4)||'-7'||substr(${e},14,3)||'-8'||substr(${e},18,3)||'-'||substr(${e},21,12)`;
  const spanSecs = SPAN_DAYS * 86400;
  await db.asSystem(async (trx) => {
    const statements = `
      CREATE TEMP TABLE seed ON COMMIT DROP AS
        SELECT i, 'conv_' || ${uuidish(`md5('${tenantId}' || i::text)`)} AS id,
               now() - make_interval(secs => (i::float8 * ${spanSecs} / ${total}) + 3600) AS t0,
               abs(hashtext('a' || i)::bigint) AS h1, abs(hashtext('b' || i)::bigint) AS h2, abs(hashtext('c' || i)::bigint) AS h3
        FROM generate_series(${from}, ${to}) AS i;
      INSERT INTO contacts (id, tenant_id, name, email, created_at, updated_at)
        SELECT 'ct_' || ${uuidish(`md5('contact' || id)`)}, '${tenantId}', 'Customer ' || i, 'customer' || i || '@shop.example', t0, t0 FROM seed;
      INSERT INTO conversations (id, tenant_id, contact_id, status, priority, subject, assigned_user_id, last_message, last_message_at, last_activity_at, created_at, updated_at, closed_at, message_count)
        SELECT id, '${tenantId}', 'ct_' || ${uuidish(`md5('contact' || id)`)}, 'closed', 'normal', 'Order ' || i, '${ownerId}', 'Thanks', t0 + interval '10 minutes', t0 + interval '2 hours', t0, t0, t0 + make_interval(secs => 600 + h3 % 86400), ${MESSAGES_PER_CONVERSATION}
        FROM seed;
      INSERT INTO conversation_facts (conversation_id, tenant_id, created_at, opened_at, first_assigned_at, queue_wait_recorded, first_visitor_at, first_response_at, closed_at)
        SELECT id, '${tenantId}', t0, t0, t0 + make_interval(secs => h1 % 300), true, t0, t0 + make_interval(secs => 30 + h1 % 900), t0 + make_interval(secs => 600 + h3 % 86400) FROM seed;
      INSERT INTO messages (id, tenant_id, conversation_id, sender_type, sender_id, type, content, created_at)
        SELECT 'msg_' || ${uuidish(`md5(s.id || k::text)`)}, '${tenantId}', s.id,
               CASE WHEN k % 2 = 0 THEN 'visitor' ELSE 'user' END, CASE WHEN k % 2 = 0 THEN NULL ELSE '${ownerId}' END, 'text',
               CASE WHEN k = 0 THEN 'Hello, where is my order ORD' || (1000000 + s.i) || '?'
                    ELSE 'about the ' || (ARRAY['parcel','invoice','refund','delivery','account','password','shipping','discount'])[1 + (s.h2 + k) % 8]
                         || ' w' || ((s.h1 + k * 7919) % 5000) || ' and w' || ((s.h2 + k * 104729) % 5000) END,
               s.t0 + make_interval(secs => k * 60)
        FROM seed s CROSS JOIN generate_series(0, ${MESSAGES_PER_CONVERSATION - 1}) AS k;
      INSERT INTO report_facts (tenant_id, conversation_id, kind, at, department_id, agent_id, seconds, bh_seconds, value)
        SELECT '${tenantId}', s.id, f.kind, s.t0 + make_interval(secs => f.after), NULL, f.agent, f.secs, f.secs * 0.6, f.value
        FROM seed s CROSS JOIN LATERAL (VALUES
          ('conversation', 0::float8, NULL::text, NULL::float8, NULL::int),
          ('queue_wait', (s.h1 % 300)::float8, '${ownerId}', (s.h1 % 300)::float8, NULL),
          ('first_response', (30 + s.h1 % 900)::float8, '${ownerId}', (30 + s.h1 % 900)::float8 + (s.h2 % 1000) / 1000.0, NULL),
          ('response', 120, '${ownerId}', (10 + s.h2 % 600)::float8, NULL),
          ('response', 240, '${ownerId}', (10 + s.h3 % 600)::float8, NULL),
          ('response', 360, '${ownerId}', (10 + (s.h1 + s.h2) % 600)::float8, NULL),
          ('response', 480, '${ownerId}', (10 + (s.h2 + s.h3) % 600)::float8, NULL),
          ('resolution', (600 + s.h3 % 86400)::float8, '${ownerId}', (600 + s.h3 % 86400)::float8, NULL),
          ('survey', (600 + s.h3 % 86400)::float8, '${ownerId}', NULL, NULL),
          ('csat', (700 + s.h3 % 86400)::float8, '${ownerId}', NULL, 1 + s.h1 % 5)
        ) AS f (kind, after, agent, secs, value)
        WHERE f.kind <> 'csat' OR s.h2 % 3 = 0;
      INSERT INTO conversation_labels (tenant_id, conversation_id, label_id, created_at)
        SELECT '${tenantId}', id, '${labelId}', t0 FROM seed WHERE i % 10 = 0;
      WITH src AS (
        SELECT f.kind, d.dimension, d.key, (f.at AT TIME ZONE '${ZONE}')::date AS day, f.seconds, f.bh_seconds, f.value
        FROM report_facts f JOIN seed s ON s.id = f.conversation_id
        CROSS JOIN LATERAL (
          SELECT 'agent', f.agent_id WHERE f.agent_id IS NOT NULL UNION ALL SELECT 'tenant', '' UNION ALL SELECT 'label', '${labelId}' WHERE s.i % 10 = 0
        ) AS d (dimension, key)
      ), totals AS (
        INSERT INTO report_daily AS r (tenant_id, kind, dimension, key, day, n, seconds_sum, bh_n, bh_seconds_sum, value_sum, ms_sum, bh_ms_sum, satisfied)
        SELECT '${tenantId}', kind, dimension, key, day, count(*), coalesce(sum(seconds), 0), count(bh_seconds), coalesce(sum(bh_seconds), 0),
               coalesce(sum(value), 0), coalesce(sum(round(seconds * 1000)::bigint), 0), coalesce(sum(round(bh_seconds * 1000)::bigint), 0),
               count(*) FILTER (WHERE value >= 4)
        FROM src GROUP BY kind, dimension, key, day
        ON CONFLICT (tenant_id, kind, dimension, key, day) DO UPDATE
          SET n = r.n + excluded.n, seconds_sum = r.seconds_sum + excluded.seconds_sum, bh_n = r.bh_n + excluded.bh_n,
              bh_seconds_sum = r.bh_seconds_sum + excluded.bh_seconds_sum, value_sum = r.value_sum + excluded.value_sum,
              ms_sum = r.ms_sum + excluded.ms_sum, bh_ms_sum = r.bh_ms_sum + excluded.bh_ms_sum, satisfied = r.satisfied + excluded.satisfied
      )
      INSERT INTO report_daily_grid AS g (tenant_id, kind, dimension, key, day, business, grid, n)
      SELECT '${tenantId}', kind, dimension, key, day, b.business, b.grid, count(*)
      FROM src CROSS JOIN LATERAL (VALUES (false, report_grid(seconds)), (true, report_grid(bh_seconds))) AS b (business, grid)
      WHERE b.grid IS NOT NULL
      GROUP BY kind, dimension, key, day, b.business, b.grid
      ON CONFLICT (tenant_id, kind, dimension, key, day, business, grid) DO UPDATE SET n = g.n + excluded.n;
    `;
    // One statement at a time: the driver prepares each.
    for (const statement of statements.split(/;\s*\n/).filter((x) => x.trim())) await sql.raw(statement).execute(trx);
  });
}

async function main() {
  const db = await openDatabase({ databaseUrl, dataDir: tmpdir(), poolMax: 12 });
  await migrateToLatest(db.db);
  const passwords = new PasswordHasher(4, 1);
  const app = createApp({
    config: {
      validateResponses: false,
      appUrl: 'http://bench',
      rateLimits: { perMinute: 1_000_000_000, login: 1_000_000, forgotPassword: 1_000_000, widgetSessions: 1_000_000, widgetConversations: 1_000_000, widgetMessages: 1_000_000_000, widgetUploads: 1_000_000 },
      trustProxy: false,
      requireHttps: false,
    },
    logger: pino({ level: 'silent' }),
    database: db,
    tokens: new TokenService(JWT_SECRET),
    passwords,
    mailer: { send: async () => undefined, close: async () => undefined },
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1`;
  const api = async (path: string, init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(base + path, {
      method: init.method ?? 'GET',
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };

  // BENCH_REUSE=1 measures the tenant an earlier run seeded in this database (seeding is the long part).
  const password = 'correct horse battery staple';
  const login = async (email: string) => (await api('/auth/login', { method: 'POST', body: { email, password } })).access_token as string;
  let tenantId: string;
  let email: string;
  let labelId: string;
  let seeded: number;
  let seedSeconds: number;
  if (process.env.BENCH_REUSE) {
    const found = await db.asSystem((trx) =>
      sql<{ email: string; tenant_id: string; label_id: string; conversations: number }>`
        select u.email, m.tenant_id, l.id as label_id, (select count(*) from conversations c where c.tenant_id = m.tenant_id)::int as conversations
        from users u join memberships m on m.user_id = u.id join labels l on l.tenant_id = m.tenant_id
        where u.email like 'bench-%' order by u.created_at desc limit 1`.execute(trx),
    );
    const row = found.rows[0];
    if (!row) throw new Error('BENCH_REUSE: no tenant of an earlier run in this database');
    ({ email, tenant_id: tenantId, label_id: labelId, conversations: seeded } = row);
    // What earlier runs' writes added goes first (since 2026-11-29): their tens of thousands of messages
    // ("where is my parcel?", "on its way") were the tenant's newest, and a search for a word they lack
    // read through them all before reaching the seeded ones; each run measures the tenant as seeded.
    const removed = await db.asSystem((trx) =>
      sql<{ n: number }>`with gone as (
          delete from conversations where tenant_id = ${tenantId} and (subject is null or subject not like 'Order %') returning id
        ) select count(*)::int as n from gone`.execute(trx),
    );
    seeded -= removed.rows[0]!.n;
    seedSeconds = Number(process.env.BENCH_SEEDED_SECONDS ?? Number.NaN);
  } else {
    email = `bench-${randomUUID()}@example.test`;
    const registered = await api('/auth/register', { method: 'POST', body: { email, password, name: 'Owner', tenant_name: 'Reports bench', timezone: ZONE } });
    tenantId = registered.tenant.id;
    const ownerId: string = registered.user.id;
    labelId = (await api('/labels', { method: 'POST', token: registered.access_token, body: { name: 'vip', color: '#aa0000' } })).id;

    // ---- seeding --------------------------------------------------------------------------------------
    const seedStarted = Date.now();
    const deadline = seedStarted + SEED_SECONDS * 1000;
    for (const table of ['contacts', 'conversations', 'messages', 'report_facts', 'conversation_labels', 'surveys']) await sql.raw(`ALTER TABLE ${table} DISABLE TRIGGER USER`).execute(db.db);
    seeded = 0;
    try {
      while (seeded < TARGET_CONVERSATIONS && Date.now() < deadline) {
        const to = Math.min(TARGET_CONVERSATIONS, seeded + BATCH) - 1;
        await seedBatch(db, tenantId, ownerId, labelId, seeded, to, TARGET_CONVERSATIONS);
        seeded = to + 1;
        const elapsed = (Date.now() - seedStarted) / 1000;
        console.log(`seeded ${seeded} conversations, ${seeded * MESSAGES_PER_CONVERSATION} messages in ${round(elapsed)} s`);
      }
    } finally {
      for (const table of ['contacts', 'conversations', 'messages', 'report_facts', 'conversation_labels', 'surveys']) await sql.raw(`ALTER TABLE ${table} ENABLE TRIGGER USER`).execute(db.db);
    }
    seedSeconds = (Date.now() - seedStarted) / 1000;
  }
  // What autovacuum does in production, done here: the development cluster may run without it, and a reused
  // tenant would then carry every earlier run's dead rows (the pending facts churn one insert and one delete
  // per fact).
  await sql`vacuum analyze contacts, conversations, messages, report_facts, report_facts_pending, report_daily, report_daily_grid, conversation_labels, conversation_facts`.execute(db.db);
  // A login of its own: the one of the sign-up may have expired while seeding.
  const token = await login(email);
  const label = { id: labelId };
  const { rows: sizes } = await db.asSystem((trx) =>
    sql<{ messages: number; facts: number; daily: number; grid: number }>`
      select (select count(*) from messages where tenant_id = ${tenantId})::int as messages, (select count(*) from report_facts where tenant_id = ${tenantId})::int as facts,
             (select count(*) from report_daily where tenant_id = ${tenantId})::int as daily, (select count(*) from report_daily_grid where tenant_id = ${tenantId})::int as grid`.execute(trx),
  );
  const size = sizes[0]!;
  console.log(`scale: ${seeded} conversations, ${size.messages} messages, ${size.facts} facts, ${size.daily} + ${size.grid} rollup rows; seeding ${round(seedSeconds)} s`);

  // ---- reads ------------------------------------------------------------------------------------------
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toLocaleDateString('en-CA', { timeZone: ZONE });
  const range = `from=${day(-29)}&to=${day(0)}`;
  const timed = async (count: number, path: (i: number) => string) => {
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) await api(path(i), { token });
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      await api(path(i), { token });
      ms.push(performance.now() - t);
    }
    return { p50_ms: round(quantile(ms, 0.5)), p99_ms: round(quantile(ms, 0.99)) };
  };
  // Past days are read through caches (blocks of days, ranks per day) that the first read fills: the
  // figures above are of reads that find them filled, as every read of a range after the first of a day
  // does. What the first read costs is measured apart, each read after the tenant's caches are emptied.
  // The first read of a new day finds every past day cached but yesterday (*_next_day): emptied of
  // yesterday's ranks and the blocks that hold it before each read.
  const uncached = async (count: number, path: string, only?: 'yesterday') => {
    const ms: number[] = [];
    const yesterday = day(-1);
    // The caches filled first (unmeasured): the reads before emptied them all.
    if (only) await api(path, { token });
    for (let i = 0; i < count; i++) {
      await db.asSystem(async (trx) => {
        await sql`delete from report_blocks where tenant_id = ${tenantId} ${only ? sql`and ${yesterday}::date between first_day and last_day` : sql``}`.execute(trx);
        await sql`delete from report_day_ranks where tenant_id = ${tenantId} ${only ? sql`and day = ${yesterday}::date` : sql``}`.execute(trx);
      });
      const t = performance.now();
      await api(path, { token });
      ms.push(performance.now() - t);
    }
    return { p50_ms: round(quantile(ms, 0.5)), p99_ms: round(quantile(ms, 0.99)) };
  };
  const reads: Record<string, { p50_ms: number; p99_ms: number }> = WRITES_ONLY ? {} : {
    summary_30d_first_read: await uncached(Math.max(10, QUERIES / 10), `/reports/summary?${range}`),
    series_30d_daily_first_read: await uncached(Math.max(10, QUERIES / 10), `/reports/series?${range}&group_by=day`),
    summary_30d_next_day: await uncached(Math.max(10, QUERIES / 10), `/reports/summary?${range}`, 'yesterday'),
    series_30d_daily_next_day: await uncached(Math.max(10, QUERIES / 10), `/reports/series?${range}&group_by=day`, 'yesterday'),
    summary_30d_warm: await timed(QUERIES, () => `/reports/summary?${range}`),
    series_30d_daily_warm: await timed(QUERIES, () => `/reports/series?${range}&group_by=day`),
    summary_30d_label: await timed(QUERIES / 2, () => `/reports/summary?${range}&label_id=${label.id}`),
    summary_30d_from_facts: await timed(Math.max(10, QUERIES / 10), () => `/reports/summary?${range}&time_zone=UTC`),
    search_order_number: await timed(QUERIES / 2, (i) => `/search/conversations?q=ORD${1000000 + ((i * 7919) % seeded)}`),
    // The first letters of many words (w31: w31, w310-w319 and w3100-w3199, about 4% of the messages).
    search_word: await timed(Math.max(10, QUERIES / 10), (i) => `/search/conversations?q=w${(i * 31) % 5000}`),
    // Words in most messages (about, the: 90%; parcel, refund, ...: 11%), and a word of every contact.
    search_common: await timed(Math.max(10, QUERIES / 10), (i) => `/search/conversations?q=${['about', 'parcel', 'the refund', 'customer', 'delivery'][i % 5]}`),
    // A contact by the start of their e-mail address.
    search_contact: await timed(Math.max(10, QUERIES / 10), (i) => `/search/conversations?q=customer${(i * 7919) % seeded}`),
  };
  if (!WRITES_ONLY) console.table(reads);

  // ---- what facts cost: sends and closes, facts on and off in turns -----------------------------------
  const SENDERS = 6;
  const CLOSERS = 4;
  const widget = await api('/widgets', { method: 'POST', token, body: { name: 'Bench' } });
  await api('/domains', { method: 'POST', token, body: { widget_id: widget.id, domain: 'shop.example' } });
  const senders: { visitor: Record<string, string>; id: string }[] = [];
  for (let i = 0; i < SENDERS; i++) {
    const session = await api('/widget/sessions', { method: 'POST', headers: { origin: 'https://shop.example' }, body: { widget_id: widget.id, page_url: 'https://shop.example/' } });
    const visitor = { authorization: `Bearer ${session.visitor_token}`, origin: 'https://shop.example' };
    const conversation = await api('/widget/conversations', { method: 'POST', headers: visitor, body: { content: 'hello' } });
    senders.push({ visitor, id: conversation.id as string });
  }
  const closers: string[] = [];
  for (let i = 0; i < CLOSERS; i++) {
    const contact = await api('/contacts', { method: 'POST', token, body: { name: `Closer ${i}` } });
    closers.push((await api('/conversations', { method: 'POST', token, body: { contact_id: contact.id } })).id as string);
  }
  // A phase's rate counts the folding of the facts it wrote into their rollups too (the service's job,
  // src/reports/fold.job.ts, and report reads do it): timed after the phase and added to its time.
  // It also counts the CPU the phase used: this process's (the service and its client, which share it)
  // and PostgreSQL's backends'. Both cores are busy in every phase, so a send's throughput is the machine's
  // CPU divided by its CPU per send; but the throughput also moves with whatever else the machine runs,
  // while the CPU a send uses barely does. The goal's figure (what the facts cost a send's throughput) is
  // therefore the CPU per operation, facts on to off (*_cpu_cost_of_facts); the rates' figure is kept.
  const cpuSeconds = () => {
    const own = process.cpuUsage();
    return (own.user + own.system) / 1e6 + databaseCpuSeconds();
  };
  const phase = async (what: 'send' | 'close') => {
    const started = performance.now();
    const cpuBefore = cpuSeconds();
    const until = Date.now() + PHASE_MS;
    let done = 0;
    const loops =
      what === 'send'
        ? senders.map(async (s) => {
            while (Date.now() < until) {
              await api(`/widget/conversations/${s.id}/messages`, { method: 'POST', headers: s.visitor, body: { content: 'where is my parcel?' } });
              await api('/messages', { method: 'POST', token, body: { conversation_id: s.id, content: 'on its way' } });
              done += 2;
            }
          })
        : closers.map(async (id) => {
            while (Date.now() < until) {
              await api(`/conversations/${id}/close`, { method: 'POST', token });
              await api(`/conversations/${id}/reopen`, { method: 'POST', token });
              done += 2;
            }
          });
    await Promise.all(loops);
    await db.withTenant(tenantId, (trx) => foldPendingFacts(trx, tenantId));
    return { rate: done / ((performance.now() - started) / 1000), done, cpu: cpuSeconds() - cpuBefore };
  };
  const rates: Record<'on' | 'off', Record<'send' | 'close', number[]>> = { on: { send: [], close: [] }, off: { send: [], close: [] } };
  const work: Record<'on' | 'off', Record<'send' | 'close', { done: number; cpu: number }>> = {
    on: { send: { done: 0, cpu: 0 }, close: { done: 0, cpu: 0 } },
    off: { send: { done: 0, cpu: 0 }, close: { done: 0, cpu: 0 } },
  };
  try {
    // Unmeasured first, so that the service's cold start is not charged to the first phase (always facts-on).
    for (const what of ['send', 'close'] as const) console.log(`warm-up (unmeasured), ${what}: ${round((await phase(what)).rate)} /s`);
    for (const [i, facts] of TURNS.entries()) {
      setFactHooksForBenchmark(facts === 'on');
      await factTriggers(db, facts === 'on');
      for (const what of ['send', 'close'] as const) {
        // What autovacuum would do, untimed (since 2026-11-29): the phases update the same few conversations
        // thousands of times, and without it (this machine's cluster runs without autovacuum) each phase
        // walked more dead versions than the one before, and the CPU per send rose through a run by more
        // than the facts cost (the runs' per-phase lines show it).
        await sql`vacuum conversations, conversation_facts, read_marks, report_facts_pending`.execute(db.db);
        const { rate, done, cpu } = await phase(what);
        rates[facts][what].push(rate);
        work[facts][what].done += done;
        work[facts][what].cpu += cpu;
        console.log(`phase ${i + 1}: facts ${facts}, ${what}: ${round(rate)} /s, ${round((cpu / done) * 1000, 2)} ms CPU each`);
      }
    }
  } finally {
    setFactHooksForBenchmark(true);
    await factTriggers(db, true);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const cpuEach = (facts: 'on' | 'off', what: 'send' | 'close') => (work[facts][what].cpu / work[facts][what].done) * 1000;
  // The throughput lost: 1 − (facts-on throughput / facts-off throughput), throughput being the inverse of
  // the CPU each operation takes.
  const cpuCost = (what: 'send' | 'close') => round(1 - cpuEach('off', what) / cpuEach('on', what), 3);
  const rateCost = (what: 'send' | 'close') => round(1 - mean(rates.on[what]) / mean(rates.off[what]), 3);
  const writes = {
    send_cpu_ms_facts_on: round(cpuEach('on', 'send'), 3),
    send_cpu_ms_facts_off: round(cpuEach('off', 'send'), 3),
    send_cpu_cost_of_facts: cpuCost('send'),
    send_per_s_facts_on: round(mean(rates.on.send)),
    send_per_s_facts_off: round(mean(rates.off.send)),
    send_cost_of_facts: rateCost('send'),
    close_cpu_ms_facts_on: round(cpuEach('on', 'close'), 3),
    close_cpu_ms_facts_off: round(cpuEach('off', 'close'), 3),
    close_cpu_cost_of_facts: cpuCost('close'),
    close_per_s_facts_on: round(mean(rates.on.close)),
    close_per_s_facts_off: round(mean(rates.off.close)),
    close_cost_of_facts: rateCost('close'),
  };
  console.table(writes);

  const figures: Figures = {
    'scale.conversations': seeded,
    'scale.messages': size.messages,
    'scale.facts': size.facts,
    'scale.rollup_rows': size.daily + size.grid,
    'scale.share_of_goal_conversations': round(seeded / 1_000_000, 3),
    'scale.share_of_goal_messages': round(size.messages / 10_000_000, 3),
    'seed.seconds': round(seedSeconds),
    ...Object.fromEntries(Object.entries(reads).flatMap(([k, v]) => [[`${k}.p50_ms`, v.p50_ms], [`${k}.p99_ms`, v.p99_ms]])),
    ...Object.fromEntries(Object.entries(writes).map(([k, v]) => [`writes.${k}`, v])),
  };
  const writeFigures = Object.fromEntries(Object.entries(figures).filter(([k]) => k.startsWith('writes.') || k.startsWith('scale.')));
  writeResults('reports-writes', writeFigures, {
    note: `what writing the facts costs sends and closes, on a tenant of ${seeded} conversations and ${size.messages} messages (scale.*); ${WRITES_ONLY ? 'alone (--writes)' : 'after the reads of a full run'}; ${SENDERS} senders (a visitor's message, then a member's reply) and ${CLOSERS} closers (close, then reopen), ${PHASE_MS / 1000} s phases after an unmeasured warm-up, each timed until the facts it wrote are folded, facts on and off in turns (${TURNS.join(', ')}), the updated tables vacuumed before each phase, untimed; *_cpu_cost_of_facts: CPU per operation (this process and PostgreSQL's backends) facts on to off, as throughput lost; *_cost_of_facts: from the rates`,
  });
  if (WRITES_ONLY) {
    server.close();
    await passwords.close();
    await db.close();
    return;
  }
  writeResults('reports', figures, {
    note: `seeded ${process.env.BENCH_REUSE ? 'by an earlier run' : `for at most ${SEED_SECONDS} s`} (newest first: the last 30 days at the density of 1,000,000 over a year once 82,000 are in): ${seeded} conversations and ${size.messages} messages of the goal's 1,000,000 and 10,000,000 (scale.* says how far it got); reads sequential, ${QUERIES} per figure after 5 unmeasured, past days through their caches (since 2026-11-29: *_warm, filled by the reads before; *_first_read: each read after the caches are emptied; *_next_day: after yesterday's are; before, summary_30d and series_30d_daily read every day's grid); writes: ${SENDERS} senders (a visitor's message, then a member's reply) and ${CLOSERS} closers (close, then reopen), ${PHASE_MS / 1000} s phases after an unmeasured warm-up (since 2026-11-28), each timed until the facts it wrote are folded into their rollups (since their folding left the writing transaction), facts on and off in turns (${TURNS.join(', ')}; since 2026-11-29, before: six phases of 12 s); *_cpu_cost_of_facts: the cost of facts as CPU per operation (this process and PostgreSQL's backends) facts on to off, as throughput lost (since 2026-11-29); *_cost_of_facts: from the rates`,
  });
  server.close();
  await passwords.close();
  await db.close();
}

await main();
