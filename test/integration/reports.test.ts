import { expect } from 'chai';
import { sql } from 'kysely';
import request from 'supertest';
import { appendMessage } from '../../src/conversations/message.service.ts';
import { EventBus } from '../../src/events/bus.ts';
import { inTenantTransaction } from '../../src/events/outbox.ts';
import { openSecondsBetween } from '../../src/reports/business-time.ts';
import { foldJob } from '../../src/reports/fold.job.ts';
import { foldPendingFacts } from '../../src/reports/report.repository.ts';
import { ReportService, partsOf, pointsOf, rangeOf, spansOf } from '../../src/reports/report.service.ts';
import type { UserPrincipal } from '../../src/shared/principal.ts';
import { type TestTenant, createConversation, createTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function visitorSays(t: TestTenant, conversationId: string, content: string, at = new Date()) {
  const { database } = await getHarness();
  await inTenantTransaction(database, new EventBus(), t.tenantId, (trx, emit) =>
    appendMessage(trx, emit, { id: conversationId, tenant_id: t.tenantId }, { sender_type: 'visitor', sender_id: null, type: 'text', content }, at),
  );
}

/** A member's reply written at `at` (a past day's, for the caches of past days). */
async function memberSays(t: TestTenant, conversationId: string, content: string, at: Date) {
  const { database } = await getHarness();
  await inTenantTransaction(database, new EventBus(), t.tenantId, (trx, emit) =>
    appendMessage(trx, emit, { id: conversationId, tenant_id: t.tenantId }, { sender_type: 'user', sender_id: t.owner.userId, type: 'text', content }, at),
  );
}

const today = () => new Date().toISOString().slice(0, 10);

describe('reports', function () {
  this.timeout(60_000);

  it('facts from the writing transactions: first response, responses, resolutions, a reopen, surveys; the summary equals the raw facts; rollups equal their facts', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant({ timezone: 'UTC' });
    const auth = bearer(t.owner.accessToken);
    const c = await createConversation(t);
    await visitorSays(t, c.id, 'hello');
    await visitorSays(t, c.id, 'anyone?');
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'a note', internal: true }).expect(201);
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'hi!' }).expect(201);
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'and more' }).expect(201);
    await visitorSays(t, c.id, 'thanks');
    await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'welcome' }).expect(201);
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(auth).expect(200);
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(auth).expect(200);
    const facts = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('report_facts').selectAll().where('conversation_id', '=', c.id).orderBy('id').execute());
    const kinds = facts.map((f) => f.kind);
    expect(kinds.filter((k) => k === 'first_response')).to.have.length(1);
    expect(kinds.filter((k) => k === 'response')).to.have.length(2);
    expect(kinds.filter((k) => k === 'resolution')).to.have.length(2);
    expect(kinds.filter((k) => k === 'survey')).to.have.length(2);
    expect(kinds.filter((k) => k === 'reopen')).to.have.length(1);
    expect(kinds.filter((k) => k === 'conversation')).to.have.length(1);
    const summary = (await request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}`).set(auth).expect(200)).body;
    expect(summary).to.include({ conversations: 1, reopens: 1, handoffs: 0, time_zone: 'UTC' });
    const seconds = (kind: string) => facts.filter((f) => f.kind === kind).map((f) => f.seconds!);
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(summary.response.count).to.equal(2);
    // The answer rounds to the millisecond in SQL's numeric; a mean on a half millisecond rounds either way in floats.
    expect(summary.response.average_seconds).to.be.closeTo(avg(seconds('response')), 0.0005 + 1e-9);
    expect(summary.resolution.count).to.equal(2);
    expect(summary.first_response.count).to.equal(1);
    expect(summary.first_response.business_hours, 'no hours: nothing counted in business hours').to.deep.equal({ count: 0, average_seconds: null, median_seconds: null, p90_seconds: null });
    expect(summary.csat).to.deep.equal({ surveys: 2, responses: 0, response_rate: 0, score: null, satisfied_share: null });
    expect(summary.first_response_buckets.reduce((n: number, b: { count: number }) => n + b.count, 0)).to.equal(1);
    // The summary above folded the facts into their rollups: none waits.
    expect(await database.withTenant(t.tenantId, (trx) => trx.selectFrom('report_facts_pending').selectAll().execute())).to.deep.equal([]);
    const rollups = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('report_daily').selectAll().where('dimension', '=', 'tenant').execute());
    for (const kind of new Set(kinds)) {
      const r = rollups.find((x) => x.kind === kind)!;
      expect(Number(r.n), kind).to.equal(kinds.filter((k) => k === kind).length);
      expect(r.seconds_sum, kind).to.be.closeTo(facts.filter((f) => f.kind === kind).reduce((a, f) => a + (f.seconds ?? 0), 0), 1e-6);
    }
    const agent = (await request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}&agent_id=${t.owner.userId}`).set(auth).expect(200)).body;
    expect(agent.response.count).to.equal(2);
    expect(agent.conversations, 'a conversation fact belongs to no agent').to.equal(0);
  });

  it('facts wait for their rollups until folded: replies, closes, labels and folds at once, each fact counted once, under its labels as they are when folded', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant({ timezone: 'UTC' });
    const auth = bearer(t.owner.accessToken);
    const label = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'vip', color: '#aa0000' }).expect(201)).body;
    const conversations = await Promise.all([0, 1, 2, 3].map(() => createConversation(t)));
    const pending = () => database.withTenant(t.tenantId, (trx) => trx.selectFrom('report_facts_pending').select('fact_id').execute());
    expect(await pending(), 'a new conversation fact waits').to.have.length(4);
    // Folded before the label: its facts move into the label's rollups with it; the others are folded
    // later, with the labels their conversations have then.
    expect(await database.withTenant(t.tenantId, (trx) => foldPendingFacts(trx, t.tenantId))).to.equal(4);
    await request(app).post(`/api/v1/conversations/${conversations[0]!.id}/labels/${label.id}`).set(auth).expect(200);
    const folds: Promise<unknown>[] = [];
    await Promise.all(
      conversations.map(async (c, i) => {
        for (let round = 0; round < 3; round++) {
          await visitorSays(t, c.id, `question ${round}`);
          await request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: `answer ${round}` }).expect(201);
          folds.push(database.withTenant(t.tenantId, (trx) => foldPendingFacts(trx, t.tenantId)));
          if (round === 1 && i % 2 === 1) await request(app).post(`/api/v1/conversations/${c.id}/labels/${label.id}`).set(auth).expect(200);
          folds.push(request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}&label_id=${label.id}`).set(auth).expect(200));
        }
        await request(app).post(`/api/v1/conversations/${c.id}/close`).set(auth).expect(200);
        if (i === 3) await request(app).delete(`/api/v1/conversations/${c.id}/labels/${label.id}`).set(auth).expect(200);
      }),
    );
    await Promise.all(folds);
    const summary = (key: string) => request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}${key}`).set(auth).expect(200);
    const all = (await summary('')).body;
    expect(await pending(), 'the report folded every waiting fact').to.deep.equal([]);
    expect(all.conversations).to.equal(4);
    expect(all.first_response.count).to.equal(4);
    expect(all.response.count).to.equal(12);
    expect(all.resolution.count).to.equal(4);
    // The label is on conversations 0 and 1 at the end (3 had it and lost it): their facts, and only theirs.
    const labelled = (await summary(`&label_id=${label.id}`)).body;
    expect(labelled).to.include({ conversations: 2 });
    expect(labelled.response.count).to.equal(6);
    expect(labelled.resolution.count).to.equal(2);
    const { rows: wrong } = await database.withTenant(t.tenantId, (trx) =>
      sql<{ kind: string }>`
        with f as (select kind, count(*) as n from report_facts where tenant_id = ${t.tenantId} group by kind),
          r as (select kind, sum(n) as n from report_daily where tenant_id = ${t.tenantId} and dimension = 'tenant' group by kind)
        select coalesce(f.kind, r.kind) as kind from f full join r using (kind) where f.n is distinct from r.n
      `.execute(trx),
    );
    expect(wrong, 'rollups differing from their facts').to.deep.equal([]);
  });

  it("the fold job folds every tenant's waiting facts, each tenant in its own transaction, and stops between tenants when asked", async () => {
    const { database } = await getHarness();
    const [a, b] = [await createTenant({ timezone: 'UTC' }), await createTenant({ timezone: 'Asia/Tokyo' })];
    await createConversation(a);
    await createConversation(b);
    const waiting = (tenantId: string) => database.withTenant(tenantId, (trx) => trx.selectFrom('report_facts_pending').select('fact_id').execute());
    expect((await waiting(a.tenantId)).length + (await waiting(b.tenantId)).length).to.equal(2);
    const stopped = new AbortController();
    stopped.abort();
    expect(await foldJob(30_000).run(database, stopped.signal)).to.deep.equal({ tenants: 0, folded: 0 });
    const result = (await foldJob(30_000).run(database, new AbortController().signal)) as { tenants: number; folded: number };
    expect(result.folded).to.be.at.least(2);
    expect(await waiting(a.tenantId)).to.deep.equal([]);
    expect(await waiting(b.tenantId)).to.deep.equal([]);
    const daily = await database.withTenant(b.tenantId, (trx) => trx.selectFrom('report_daily').select(['kind', 'dimension', 'n']).execute());
    expect(daily).to.deep.equal([{ kind: 'conversation', dimension: 'tenant', n: 1 }]);
  });

  it("past days are read through caches (blocks of days for a summary, ranks per day for a series) that a change of those days' rollups empties", async () => {
    const { app, database } = await getHarness();
    const t = await createTenant({ timezone: 'UTC' });
    const auth = bearer(t.owner.accessToken);
    const c = await createConversation(t);
    const label = (await request(app).post('/api/v1/labels').set(auth).send({ name: 'vip', color: '#aa0000' }).expect(201)).body;
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const at = (offset: number, seconds: number) => new Date(Date.parse(`${day(offset)}T10:00:00Z`) + seconds * 1000);
    // Two answers on a day three weeks ago: a first response after 60 s, a response after 200 s.
    await visitorSays(t, c.id, 'hello', at(-21, 0));
    await memberSays(t, c.id, 'hi', at(-21, 60));
    await visitorSays(t, c.id, 'and?', at(-21, 100));
    await memberSays(t, c.id, 'here', at(-21, 300));

    const principal: UserPrincipal = { kind: 'user', userId: t.owner.userId, tenantId: t.tenantId, role: 'owner', seat: 'full', sessionId: 'ses_x' };
    const factsOnly = new ReportService(database, { read: 'facts' });
    const range = { from: day(-40), to: day(0) };
    const read = async (query: Record<string, string>) => {
      const qs = new URLSearchParams({ ...range, ...query }).toString();
      const summary = (await request(app).get(`/api/v1/reports/summary?${qs}`).set(auth).expect(200)).body;
      const series = (await request(app).get(`/api/v1/reports/series?${qs}&group_by=day`).set(auth).expect(200)).body;
      expect(summary, 'the summary equals the one from the facts').to.deep.equal(await factsOnly.summary(principal, { ...range, ...query }));
      expect(series, 'the series equals the one from the facts').to.deep.equal(await factsOnly.series(principal, { ...range, ...query, group_by: 'day' }));
      return { summary, series };
    };
    const cached = () =>
      database.withTenant(t.tenantId, async (trx) => ({
        blocks: await trx.selectFrom('report_blocks').select(['dimension', 'key', sql<string>`first_day::text`.as('first'), sql<string>`last_day::text`.as('last')]).execute(),
        ranks: await trx.selectFrom('report_day_ranks').select(['kind', 'dimension', 'total', sql<string>`day::text`.as('day')]).where('day', '=', sql<Date>`${day(-21)}::date`).execute(),
      }));
    const holds = (blocks: { first: string; last: string }[], d: string) => blocks.some((b) => b.first <= d && d <= b.last);

    const first = await read({});
    expect(first.summary.response.count).to.equal(2);
    expect(first.summary.response.median_seconds).to.equal(130);
    let caches = await cached();
    expect(holds(caches.blocks, day(-21)), 'a block holding the day is cached').to.equal(true);
    expect(caches.blocks.every((b) => b.last < day(0)), 'no block holds today').to.equal(true);
    expect(caches.ranks.find((r) => r.kind === 'response' && r.dimension === 'tenant')?.total).to.equal(2);
    expect(await read({}), 'read again, from the caches').to.deep.equal(first);

    // A late answer on that day (folded now): the day's rollups change, its caches go and come back with it.
    await visitorSays(t, c.id, 'still there?', at(-21, 400));
    await memberSays(t, c.id, 'yes', at(-21, 1400));
    const later = await read({});
    expect(later.summary.response.count).to.equal(3);
    expect(later.summary.response.median_seconds).to.equal(200);
    const point = later.series.points.find((p: { start: string }) => p.start.startsWith(day(-21)));
    expect(point.response).to.include({ count: 3, median_seconds: 200 });
    caches = await cached();
    expect(caches.ranks.find((r) => r.kind === 'response' && r.dimension === 'tenant')?.total, 'the day ranked again').to.equal(3);

    // The label's reports: cached empty, then the label put on the conversation carries its past facts in.
    const labelled = await read({ label_id: label.id });
    expect(labelled.summary.response.count).to.equal(0);
    expect(holds((await cached()).blocks.filter((b) => b.dimension === 'label'), day(-21)), "the label's empty block is cached").to.equal(true);
    await request(app).post(`/api/v1/conversations/${c.id}/labels/${label.id}`).set(auth).expect(200);
    const moved = await read({ label_id: label.id });
    expect(moved.summary.response).to.include({ count: 3, median_seconds: 200 });

    // A new time zone rebuilds the rollups: every cached day goes with them.
    await request(app).patch(`/api/v1/tenants/${t.tenantId}`).set(auth).send({ timezone: 'Pacific/Kiritimati' }).expect(200);
    const shifted = await read({});
    expect(shifted.summary.response.count).to.equal(3);
  });

  it('a block is summed from the smaller cached blocks inside it: the figures stay those of the facts', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant({ timezone: 'UTC' });
    const auth = bearer(t.owner.accessToken);
    const c = await createConversation(t);
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const at = (offset: number, seconds: number) => new Date(Date.parse(`${day(offset)}T10:00:00Z`) + seconds * 1000);
    for (const [offset, wait] of [[-60, 50], [-45, 70], [-33, 20], [-21, 300], [-12, 90], [-5, 40]] as const) {
      await visitorSays(t, c.id, 'hello', at(offset, 0));
      await memberSays(t, c.id, 'hi', at(offset, wait));
    }
    const principal: UserPrincipal = { kind: 'user', userId: t.owner.userId, tenantId: t.tenantId, role: 'owner', seat: 'full', sessionId: 'ses_x' };
    const factsOnly = new ReportService(database, { read: 'facts' });
    const same = async (range: { from: string; to: string }) => {
      const summary = (await request(app).get(`/api/v1/reports/summary?from=${range.from}&to=${range.to}`).set(auth).expect(200)).body;
      expect(summary, `${range.from}..${range.to}`).to.deep.equal(await factsOnly.summary(principal, range));
    };
    // Short ranges first (small blocks), then longer ones over them (larger blocks, summed from those).
    for (const length of [6, 14, 30, 62]) for (let end = -40; end <= 0; end += 7) await same({ from: day(end - length), to: day(end) });
    const blocks = await database.withTenant(t.tenantId, (trx) =>
      trx.selectFrom('report_blocks').select([sql<string>`first_day::text`.as('first'), sql<string>`last_day::text`.as('last')]).where('dimension', '=', 'tenant').execute(),
    );
    const nested = blocks.filter((b) => blocks.some((o) => o !== b && o.first <= b.first && b.last <= o.last));
    expect(nested.length, 'cached blocks inside larger cached ones').to.be.greaterThan(0);
  });

  it('spansOf: blocks aligned to their size, only up to the last day they may hold, and days, covering the range once', () => {
    for (const [first, lastBlock, last] of [[20_000, 20_029, 20_030], [19_990, 20_100, 20_300], [5, 4, 9], [-7, 3, 3], [0, 1000, 399]] as const) {
      const { blocks, days } = spansOf(first, lastBlock, last);
      const covered = [...blocks, ...days].flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i)).sort((a, b) => a - b);
      expect(covered, `${first}..${last}`).to.deep.equal(Array.from({ length: last - first + 1 }, (_, i) => first + i));
      for (const [a, b] of blocks) {
        const size = b - a + 1;
        expect(size >= 4 && (size & (size - 1)) === 0 && a % size === 0 && b <= lastBlock, `block ${a}..${b}`).to.equal(true);
      }
    }
    // A 30-day range ending today: a handful of blocks and at most seven days outside them.
    const { blocks, days } = spansOf(20_421, 20_449, 20_450);
    expect(blocks.length).to.be.at.most(5);
    expect(days.reduce((n, [a, b]) => n + b - a + 1, 0)).to.be.at.most(7);
  });

  it('partsOf: a new block is summed from the cached blocks inside it and its other days, each day once; day after day, a few reads', () => {
    const key = (a: number, b: number) => `${new Date(a * 86_400_000).toISOString().slice(0, 10)}:${new Date(b * 86_400_000).toISOString().slice(0, 10)}`;
    const cached = new Set<string>();
    let mostDays = 0;
    let mostBlocks = 0;
    // A 30-day range read each day for 300 days: yesterday's blocks are new, the days before are cached.
    for (let today = 20_000; today < 20_300; today++) {
      for (const [a, b] of spansOf(today - 29, today - 1, today).blocks) {
        if (cached.has(key(a, b))) continue;
        const { blocks, days } = partsOf(a, b, cached);
        const covered = [...blocks, ...days].flatMap(([x, y]) => Array.from({ length: y - x + 1 }, (_, i) => x + i)).sort((x, y) => x - y);
        expect(covered, `${a}..${b}`).to.deep.equal(Array.from({ length: b - a + 1 }, (_, i) => a + i));
        for (const [x, y] of blocks) expect(cached.has(key(x, y)) && !(x === a && y === b), `${x}..${y} in ${a}..${b}`).to.equal(true);
        // The first read of the range has nothing cached.
        if (today > 20_000) {
          mostDays = Math.max(mostDays, days.reduce((n, [x, y]) => n + y - x + 1, 0));
          mostBlocks = Math.max(mostBlocks, blocks.length);
        }
        cached.add(key(a, b));
      }
    }
    // Summed from days alone, a 16-day block would read 16. The most are read where the range's start
    // moves into a larger block cached whole: the smaller blocks after it were never cached.
    expect(mostDays, 'days read for one new block').to.be.at.most(8);
    expect(mostBlocks).to.be.at.most(4);
    expect(partsOf(20_000, 20_015, new Set()), 'nothing cached: its days').to.deep.equal({ blocks: [], days: [[20_000, 20_015]] });
  });

  it('series: one point per day (or hour) of the range in the time zone, empty ones included; CSV by format or Accept', async () => {
    const { app } = await getHarness();
    const t = await createTenant({ timezone: 'Europe/Paris' });
    const auth = bearer(t.owner.accessToken);
    await createConversation(t);
    const series = (await request(app).get('/api/v1/reports/series?from=2026-03-28&to=2026-03-30').set(auth).expect(200)).body;
    expect(series.points.map((p: { start: string }) => p.start)).to.deep.equal(['2026-03-27T23:00:00.000Z', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
    const hours = (await request(app).get('/api/v1/reports/series?from=2026-03-29&to=2026-03-29&group_by=hour').set(auth).expect(200)).body;
    expect(hours.points, 'the night clocks go forward has 23 hours').to.have.length(23);
    const now = (await request(app).get(`/api/v1/reports/series?from=${today()}&to=${today()}&time_zone=UTC`).set(auth).expect(200)).body;
    expect(now.points[0].conversations).to.equal(1);
    const csv = await request(app).get(`/api/v1/reports/series?from=${today()}&to=${today()}&format=csv`).set(auth).expect(200);
    expect(csv.headers['content-type']).to.match(/^text\/csv/);
    expect(csv.text.split('\r\n')[0]).to.match(/^start,conversations,reopens,handoffs,first_response_count/);
    const accept = await request(app).get(`/api/v1/reports/summary?from=${today()}&to=${today()}`).set(auth).set('Accept', 'text/csv').expect(200);
    expect(accept.text).to.contain('conversations,1');
  });

  it('400 naming the parameter: a range over 400 days or ending before it starts, an unknown time zone or grouping, a date that does not exist', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const named = async (url: string, field: string) => {
      const body = expectProblem(await request(app).get(url).set(auth), 400, 'ERR_VALIDATION');
      expect(JSON.stringify(body.errors), url).to.contain(field);
    };
    await named('/api/v1/reports/summary?from=2025-01-01&to=2026-02-05', 'to');
    await named('/api/v1/reports/summary?from=2026-02-05&to=2026-02-04', 'to');
    await named('/api/v1/reports/summary?from=2026-02-05&to=2026-02-06&time_zone=Mars/Olympus', 'time_zone');
    await named('/api/v1/reports/series?from=2026-02-05&to=2026-02-06&group_by=week', 'group_by');
    await named('/api/v1/reports/series?from=2026-02-30&to=2026-03-06', 'from');
    await request(app).get('/api/v1/reports/summary?from=2025-01-01&to=2026-02-04').set(auth).expect(200);
  });

  it('business time: only open hours count, across midnight and a change of daylight saving', () => {
    const hours = { time_zone: 'Europe/Paris', weekly: { fri: [['09:00', '17:00']], sat: [['22:00', '02:00']], sun: [['09:00', '10:00']] }, overrides: [] } as never;
    // Friday 2026-03-27 16:00 Paris (15:00Z) to Sunday 2026-03-29 09:30 Paris (07:30Z, summer time): 1 h + 4 h + 30 min.
    expect(openSecondsBetween(hours, new Date('2026-03-27T15:00:00Z'), new Date('2026-03-29T07:30:00Z'))).to.equal((60 + 240 + 30) * 60);
    expect(openSecondsBetween(hours, new Date('2026-03-27T20:00:00Z'), new Date('2026-03-27T21:00:00Z'))).to.equal(0);
    const { start, end } = rangeOf({ from: '2026-10-25', to: '2026-10-25' }, 'Europe/Paris');
    expect((end.getTime() - start.getTime()) / 3_600_000, 'the night clocks go back has 25 hours').to.equal(25);
    expect(pointsOf(20_386, 20_386, 'Europe/Paris', 'hour')).to.have.length(24);
  });
});
