import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import pino from 'pino';
import request from 'supertest';
import * as authRepo from '../../src/auth/auth.repository.ts';
import { hashOpaqueToken, newOpaqueToken } from '../../src/auth/tokens.ts';
import { loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { type Job, type JobRun, Scheduler } from '../../src/jobs/scheduler.ts';
import { type RetentionPeriods, retentionJobs } from '../../src/retention/retention.jobs.ts';
import { newId } from '../../src/shared/ids.ts';
import { PASSWORD, type TestTenant, createConversation, createTenant, createVisitor } from '../support/factories.ts';
import { getHarness, openExtraDatabase } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const quiet = pino({ level: 'silent' });
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

// Job rows live in the shared test database: every scheduler here names its jobs afresh, so no test
// finds a job already run by another (or by an earlier run of the suite on PostgreSQL).
const uniquely = (jobs: Job[]) => {
  const suffix = randomUUID().slice(0, 8);
  return jobs.map((job) => ({ ...job, name: `${job.name}.${suffix}` }));
};

/** A logger whose lines the test reads. */
function capturingLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

/** Moves a timestamp column of some rows back in time, on the database's clock. */
async function setBack(database: Database, table: string, column: string, where: { column: string; values: string[] }, by: string) {
  await database.asSystem((trx) =>
    sql`update ${sql.table(table)} set ${sql.ref(column)} = now() - ${by}::interval where ${sql.ref(where.column)} in (${sql.join(where.values)})`.execute(trx),
  );
}

const ok = (runs: JobRun[]) => runs.map((r) => (r.ok ? r.name : `${r.name} failed: ${String(r.error)}`));

describe('retention', () => {
  describe('the retention jobs', () => {
    const periods: RetentionPeriods = {
      intervalMs: HOUR,
      idempotencyKeyMs: 24 * HOUR,
      refreshTokenMs: 24 * HOUR,
      mailTokenMs: 24 * HOUR,
      pageViewMs: 30 * DAY,
      eventMs: 7 * DAY,
      deliveryMs: 30 * DAY,
    };

    async function login(t: TestTenant) {
      const { app } = await getHarness();
      const res = await request(app).post('/api/v1/auth/login').send({ email: t.owner.email, password: PASSWORD }).expect(200);
      return res.body as { access_token: string; refresh_token: string };
    }

    async function refreshTokenRows(tokens: string[]) {
      const { database } = await getHarness();
      const rows = await database.asSystem((trx) =>
        trx.selectFrom('refresh_tokens').select('token_hash').where('token_hash', 'in', tokens.map(hashOpaqueToken)).execute(),
      );
      return tokens.filter((token) => rows.some((r) => Buffer.from(r.token_hash).equals(hashOpaqueToken(token))));
    }

    it('delete each kind of row past its period, in batches, and keep the rest', async () => {
      const { app, database } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);

      // Idempotency keys: one past 24 h, one fresh.
      const [oldKey, freshKey] = [randomUUID(), randomUUID()];
      for (const key of [oldKey, freshKey]) {
        await request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).set('Idempotency-Key', key).send({ conversation_id: c.id, content: key }).expect(201);
      }
      await setBack(database, 'idempotency_keys', 'created_at', { column: 'key', values: [oldKey] }, '25 hours');

      // Refresh tokens: expired and long-revoked logins go; a just-revoked one and a live login's used
      // token stay (presenting the used token again must still revoke its login).
      const expired = await login(t);
      await database.asSystem((trx) =>
        sql`update refresh_tokens set expires_at = now() - interval '2 days' where token_hash = ${hashOpaqueToken(expired.refresh_token)}`.execute(trx),
      );
      const longRevoked = await login(t);
      await request(app).post('/api/v1/auth/logout').send({ refresh_token: longRevoked.refresh_token }).expect(200);
      await database.asSystem((trx) =>
        sql`update refresh_tokens set revoked_at = now() - interval '2 days' where token_hash = ${hashOpaqueToken(longRevoked.refresh_token)}`.execute(trx),
      );
      const justRevoked = await login(t);
      await request(app).post('/api/v1/auth/logout').send({ refresh_token: justRevoked.refresh_token }).expect(200);
      const used = await login(t);
      const next = (await request(app).post('/api/v1/auth/refresh').send({ refresh_token: used.refresh_token }).expect(200)).body;
      await database.asSystem((trx) =>
        sql`update refresh_tokens set rotated_at = now() - interval '2 days', created_at = now() - interval '2 days'
            where token_hash = ${hashOpaqueToken(used.refresh_token)}`.execute(trx),
      );

      // Mail tokens: used or expired past 24 h go; just used and still usable stay.
      const mail = { expired: newOpaqueToken(), usedLongAgo: newOpaqueToken(), justUsed: newOpaqueToken(), usable: newOpaqueToken() };
      await database.asSystem(async (trx) => {
        for (const [name, token] of Object.entries(mail)) {
          await authRepo.insertMailToken(trx, {
            id: newId('session'),
            purpose: 'reset_password',
            user_id: t.owner.userId,
            token_hash: token.hash,
            expires_at: new Date(Date.now() + HOUR),
          });
          if (name === 'expired') await sql`update mail_tokens set expires_at = now() - interval '25 hours' where token_hash = ${token.hash}`.execute(trx);
          if (name === 'usedLongAgo') await sql`update mail_tokens set used_at = now() - interval '25 hours' where token_hash = ${token.hash}`.execute(trx);
          if (name === 'justUsed') await sql`update mail_tokens set used_at = now() where token_hash = ${token.hash}`.execute(trx);
        }
      });

      // Page views: five past 30 days (more than a batch of 2), one fresh.
      const visitor = await createVisitor(t);
      await database.withTenant(t.tenantId, async (trx) => {
        for (let i = 0; i < 5; i++) {
          await trx.insertInto('page_views').values({ tenant_id: t.tenantId, visitor_id: visitor, url: `https://old.example/${i}`, viewed_at: sql<Date>`now() - interval '31 days'` }).execute();
        }
        await trx.insertInto('page_views').values({ tenant_id: t.tenantId, visitor_id: visitor, url: 'https://fresh.example/' }).execute();
      });

      // Events: the conversation's past 7 days, another conversation's fresh.
      const freshConversation = await createConversation(t);
      await setBack(database, 'events', 'created_at', { column: 'conversation_id', values: [c.id] }, '8 days');

      const scheduler = new Scheduler({ database, logger: quiet, jobs: uniquely(retentionJobs(periods, { batch: 2 })) });
      const runs = await scheduler.runDue();
      await scheduler.stop();
      expect(ok(runs)).to.have.length(8).and.satisfy((names: string[]) => names.every((n) => n.startsWith('retention.') && !n.includes('failed')));
      const pageViewRun = runs.find((r) => r.name.startsWith('retention.page_views'))!;
      expect(pageViewRun.ok && (pageViewRun.result as { deleted: number }).deleted).to.be.at.least(5);

      const keys = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('idempotency_keys').select('key').execute());
      expect(keys.map((k) => k.key)).to.deep.equal([freshKey]);

      expect(await refreshTokenRows([expired.refresh_token, longRevoked.refresh_token, justRevoked.refresh_token, used.refresh_token, next.refresh_token])).to.deep.equal([
        justRevoked.refresh_token,
        used.refresh_token,
        next.refresh_token,
      ]);
      // The used token kept its meaning: presented again, it revokes its login.
      expectProblem(await request(app).post('/api/v1/auth/refresh').send({ refresh_token: used.refresh_token }), 401, 'ERR_INVALID_REFRESH_TOKEN');
      expectProblem(await request(app).post('/api/v1/auth/refresh').send({ refresh_token: next.refresh_token }), 401, 'ERR_INVALID_REFRESH_TOKEN');

      const mailLeft = await database.asSystem((trx) =>
        trx.selectFrom('mail_tokens').select('token_hash').where('token_hash', 'in', Object.values(mail).map((m) => m.hash)).execute(),
      );
      const left = Object.entries(mail)
        .filter(([, m]) => mailLeft.some((r) => Buffer.from(r.token_hash).equals(m.hash)))
        .map(([name]) => name);
      expect(left).to.have.members(['justUsed', 'usable']);

      const views = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('page_views').select('url').execute());
      expect(views.map((v) => v.url)).to.deep.equal(['https://fresh.example/']);

      const events = await database.withTenant(t.tenantId, (trx) => trx.selectFrom('events').select(['conversation_id']).execute());
      expect(events.filter((e) => e.conversation_id === freshConversation.id)).to.not.be.empty;
      expect(events.filter((e) => e.conversation_id === c.id)).to.deep.equal([]);
    });

    it('finished webhook deliveries, bot deliveries and workflow runs go after their period; pending ones and ones attempted lately stay', async () => {
      const { database } = await getHarness();
      const t = await createTenant();
      const id = (prefix: string) => `${prefix}_${randomUUID()}`;
      // Ids as newId makes them (a UUIDv7) when the row was made: the jobs find old rows by their ids.
      const madeAgo = (prefix: string, days: number) => `${prefix}_${uuidv7({ msecs: Date.now() - days * DAY })}`;
      const [hook, bot, workflow] = [id('whk'), id('bot'), id('wf')];
      // Rows by name: [status, made days ago, last attempted (webhooks) or finished (runs) days ago].
      const webhookRows = {
        done1: ['succeeded', 31, 31],
        done2: ['succeeded', 40, 40],
        done3: ['failed', 35, 34],
        pending: ['pending', 31, 1],
        redeliveredLately: ['failed', 31, 1],
        fresh: ['succeeded', 1, 1],
      } as const;
      const botRows = { done: ['succeeded', 31], failed: ['failed', 32], pending: ['pending', 31], fresh: ['succeeded', 0] } as const;
      const runRows = { done: ['succeeded', 31, 31], skipped: ['skipped', 31, 31], pending: ['pending', 31, 0], finishedLately: ['failed', 31, 1], fresh: ['succeeded', 0, 0] } as const;
      const ids = { webhook: new Map<string, string>(), bot: new Map<string, string>(), run: new Map<string, string>() };
      await database.asSystem(async (trx) => {
        await sql`insert into webhooks (id, tenant_id, url, events, secret) values (${hook}, ${t.tenantId}, 'https://example.test/hook', ${['*']}, 'whsec_x')`.execute(trx);
        await sql`insert into bots (id, tenant_id, name, kind, enabled, secret) values (${bot}, ${t.tenantId}, 'b', 'faq', false, 'whsec_x')`.execute(trx);
        await sql`insert into workflows (id, tenant_id, name, enabled, trigger_type, trigger, actions, secret)
          values (${workflow}, ${t.tenantId}, 'w', false, 'message.created', '{"type":"message.created"}', '[]', 'whsec_x')`.execute(trx);
        // Pending rows are due a day from now: no dispatcher of the suite claims them meanwhile.
        for (const [name, [status, made, attempted]] of Object.entries(webhookRows)) {
          const row = madeAgo('whd', made);
          ids.webhook.set(name, row);
          await sql`insert into webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, body, status, next_attempt_at, created_at, last_attempt_at)
            values (${row}, ${t.tenantId}, ${hook}, ${id('evt')}, 'message.created', '{}', ${status},
              ${status === 'pending' ? sql`now() + interval '1 day'` : null}, now() - ${`${made} days`}::interval, now() - ${`${attempted} days`}::interval)`.execute(trx);
        }
        for (const [name, [status, made]] of Object.entries(botRows)) {
          const row = madeAgo('btd', made);
          ids.bot.set(name, row);
          await sql`insert into bot_deliveries (id, tenant_id, bot_id, conversation_id, event_id, event_type, body, status, next_attempt_at, created_at)
            values (${row}, ${t.tenantId}, ${bot}, 'cnv', ${id('evt')}, 'message.created', '{}', ${status},
              ${status === 'pending' ? sql`now() + interval '1 day'` : null}, now() - ${`${made} days`}::interval)`.execute(trx);
        }
        for (const [name, [status, made, finished]] of Object.entries(runRows)) {
          const row = madeAgo('wfr', made);
          ids.run.set(name, row);
          await sql`insert into workflow_runs (id, tenant_id, workflow_id, event_id, event_type, event_body, depth, status, skip_reason, next_attempt_at, created_at, finished_at)
            values (${row}, ${t.tenantId}, ${workflow}, ${id('evt')}, 'message.created', '{}', 1, ${status}, ${status === 'skipped' ? 'conditions' : null},
              ${status === 'pending' ? sql`now() + interval '1 day'` : null}, now() - ${`${made} days`}::interval,
              ${status === 'pending' ? null : sql`now() - ${`${finished} days`}::interval`})`.execute(trx);
        }
      });

      const scheduler = new Scheduler({ database, logger: quiet, jobs: uniquely(retentionJobs(periods, { batch: 2 })) });
      const runs = await scheduler.runDue();
      await scheduler.stop();
      expect(ok(runs).filter((n) => n.includes('failed'))).to.deep.equal([]);

      const left = async (table: 'webhook_deliveries' | 'bot_deliveries' | 'workflow_runs', byName: Map<string, string>) => {
        const rows = await database.asSystem((trx) => trx.selectFrom(table).select('id').where('id', 'in', [...byName.values()]).execute());
        return [...byName].filter(([, row]) => rows.some((r) => r.id === row)).map(([name]) => name);
      };
      expect(await left('webhook_deliveries', ids.webhook)).to.have.members(['pending', 'redeliveredLately', 'fresh']);
      expect(await left('bot_deliveries', ids.bot)).to.have.members(['pending', 'fresh']);
      expect(await left('workflow_runs', ids.run)).to.have.members(['pending', 'finishedLately', 'fresh']);
      const webhookRun = runs.find((r) => r.name.startsWith('retention.webhook_deliveries'))!;
      expect(webhookRun.ok && (webhookRun.result as { deleted: number }).deleted).to.be.at.least(3);
    });

    it('a key reused after its period makes a new message, even before the job has deleted it', async () => {
      const { app, database } = await getHarness();
      const t = await createTenant();
      const c = await createConversation(t);
      const key = randomUUID();
      const body = { conversation_id: c.id, content: 'hello again' };
      const send = () => request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).set('Idempotency-Key', key).send(body);

      const first = await send().expect(201);
      const replay = await send().expect(201);
      expect(replay.headers['idempotent-replayed']).to.equal('true');
      expect(replay.body.id).to.equal(first.body.id);

      await setBack(database, 'idempotency_keys', 'created_at', { column: 'key', values: [key] }, '25 hours');
      const late = await send().expect(201);
      expect(late.headers['idempotent-replayed']).to.equal(undefined);
      expect(late.body.id).to.not.equal(first.body.id);
      // The key now stands for the new message, for a new period.
      const again = await send().expect(201);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      expect(again.body.id).to.equal(late.body.id);

      const messages = await database.withTenant(t.tenantId, (trx) =>
        trx.selectFrom('messages').select('id').where('conversation_id', '=', c.id).where('content', '=', 'hello again').execute(),
      );
      expect(messages).to.have.length(2);
    });

    it('the period comes from configuration', async () => {
      const { deps, database } = await getHarness();
      const config = loadConfig({ IDEMPOTENCY_KEY_RETENTION_HOURS: '2', EVENT_RETENTION_DAYS: '3', PAGE_VIEW_RETENTION_DAYS: '10', DELIVERY_RETENTION_DAYS: '90' });
      expect(config.retention).to.include({ idempotencyKeyMs: 2 * HOUR, eventMs: 3 * DAY, pageViewMs: 10 * DAY, deliveryMs: 90 * DAY, intervalMs: HOUR });
      expect(loadConfig({}).retention).to.deep.equal({
        intervalMs: HOUR,
        idempotencyKeyMs: 24 * HOUR,
        refreshTokenMs: 24 * HOUR,
        mailTokenMs: 24 * HOUR,
        pageViewMs: 30 * DAY,
        eventMs: 7 * DAY,
        deliveryMs: 30 * DAY,
      });

      // An app built with a 2-hour period: a key 3 hours old no longer replays.
      const { createApp } = await import('../../src/app.ts');
      const app = createApp({ ...deps, config: { ...deps.config, retention: config.retention } });
      const t = await createTenant();
      const c = await createConversation(t);
      const key = randomUUID();
      const send = () => request(app).post('/api/v1/messages').set(bearer(t.owner.accessToken)).set('Idempotency-Key', key).send({ conversation_id: c.id, content: 'x' });
      const first = await send().expect(201);
      await setBack(database, 'idempotency_keys', 'created_at', { column: 'key', values: [key] }, '1 hour');
      expect((await send().expect(201)).body.id).to.equal(first.body.id);
      await setBack(database, 'idempotency_keys', 'created_at', { column: 'key', values: [key] }, '3 hours');
      expect((await send().expect(201)).body.id).to.not.equal(first.body.id);
    });
  });

  describe('the scheduler', () => {
    const counting = (name: string, intervalMs = HOUR) => {
      const job = {
        name: `${name}.${randomUUID().slice(0, 8)}`,
        intervalMs,
        runs: 0,
        run: async () => {
          job.runs++;
          return job.runs;
        },
      };
      return job;
    };

    it('runs a due job, then not again before its interval', async () => {
      const { database } = await getHarness();
      const job = counting('test.once');
      const scheduler = new Scheduler({ database, logger: quiet, jobs: [job] });
      expect(await scheduler.runDue()).to.deep.equal([{ name: job.name, ok: true, result: 1 }]);
      expect(await scheduler.runDue()).to.deep.equal([]);
      expect(job.runs).to.equal(1);
      const row = await database.asSystem((trx) =>
        sql<{ gap_ms: number }>`select extract(epoch from next_run_at - last_finished_at) * 1000 as gap_ms from scheduled_jobs where name = ${job.name}`.execute(trx),
      );
      expect(Number(row.rows[0]!.gap_ms)).to.equal(HOUR);
      await scheduler.stop();
    });

    it('two schedulers ticking at once run a job once (one database handle)', async () => {
      const { database } = await getHarness();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let runs = 0;
      const job: Job = {
        name: `test.gate.${randomUUID().slice(0, 8)}`,
        intervalMs: HOUR,
        run: async () => {
          runs++;
          await gate;
        },
      };
      const a = new Scheduler({ database, logger: quiet, jobs: [job] });
      const b = new Scheduler({ database, logger: quiet, jobs: [job] });
      const ranA = a.runDue();
      const ranB = b.runDue();
      // Whichever claimed the job is held in it by the gate; the other comes back with nothing.
      const loser = await Promise.race([ranA, ranB]);
      expect(loser).to.deep.equal([]);
      release();
      const all = [...(await ranA), ...(await ranB)];
      expect(all.map((r) => r.name)).to.deep.equal([job.name]);
      expect(runs).to.equal(1);
      await Promise.all([a.stop(), b.stop()]);
    });

    it('two instances on one PostgreSQL database ticking at once run each job once', async function () {
      if (!process.env.DATABASE_URL?.startsWith('postgres')) {
        console.log('      (skipped: two handles on one database need PostgreSQL; set DATABASE_URL)');
        this.skip();
      }
      const first = await openExtraDatabase(process.env.DATABASE_URL);
      const second = await openExtraDatabase(process.env.DATABASE_URL);
      const jobs = Array.from({ length: 20 }, (_, i) => counting(`test.race${i}`));
      for (let round = 0; round < 3; round++) {
        // Make every job due again, then let both instances claim at the same moment.
        await first.asSystem((trx) => trx.updateTable('scheduled_jobs').set({ next_run_at: sql<Date>`now()` }).where('name', 'in', jobs.map((j) => j.name)).execute());
        const a = new Scheduler({ database: first, logger: quiet, jobs });
        const b = new Scheduler({ database: second, logger: quiet, jobs });
        const [ranA, ranB] = await Promise.all([a.runDue(), b.runDue()]);
        expect(ranA.length + ranB.length).to.equal(jobs.length);
        for (const job of jobs) expect(job.runs, job.name).to.equal(round + 1);
        await Promise.all([a.stop(), b.stop()]);
      }
    });

    it('a failing job is logged, recorded and run again at its next interval; the others run', async () => {
      const { database } = await getHarness();
      const { logger, lines } = capturingLogger();
      let attempts = 0;
      const flaky: Job = {
        name: `test.flaky.${randomUUID().slice(0, 8)}`,
        intervalMs: 5 * 60_000,
        run: async () => {
          attempts++;
          if (attempts === 1) throw new Error('disk on fire');
          return 'fine';
        },
      };
      const steady = counting('test.steady');
      const scheduler = new Scheduler({ database, logger, jobs: [flaky, steady] });

      const runs = await scheduler.runDue();
      expect(runs).to.have.length(2);
      const failed = runs.find((r) => r.name === flaky.name)!;
      expect(failed.ok).to.equal(false);
      expect(String(!failed.ok && failed.error)).to.contain('disk on fire');
      expect(steady.runs).to.equal(1);
      const logged = lines.find((l) => l.job === flaky.name && l.level === 50);
      expect(logged?.msg).to.contain('scheduled job failed');
      expect(logged?.err?.message).to.equal('disk on fire');

      const row = await database.asSystem((trx) =>
        sql<{ last_error: string; gap_ms: number; locked: boolean }>`
          select last_error, extract(epoch from next_run_at - last_finished_at) * 1000 as gap_ms, locked_until is not null as locked
          from scheduled_jobs where name = ${flaky.name}`.execute(trx),
      );
      expect(row.rows[0]).to.deep.include({ last_error: 'disk on fire', locked: false });
      expect(Number(row.rows[0]!.gap_ms)).to.equal(5 * 60_000);
      expect(await scheduler.runDue()).to.deep.equal([]);

      // The interval passes: it runs again, and succeeds.
      await database.asSystem((trx) => trx.updateTable('scheduled_jobs').set({ next_run_at: sql<Date>`now()` }).where('name', '=', flaky.name).execute());
      expect(await scheduler.runDue()).to.deep.equal([{ name: flaky.name, ok: true, result: 'fine' }]);
      const after = await database.asSystem((trx) => trx.selectFrom('scheduled_jobs').select('last_error').where('name', '=', flaky.name).executeTakeFirstOrThrow());
      expect(after.last_error).to.equal(null);
      await scheduler.stop();
    });

    it('the next run survives a restart; a run whose instance died is taken over once its lease runs out', async function () {
      this.timeout(60_000);
      const dir = process.env.DATABASE_URL ? undefined : await mkdtemp(join(tmpdir(), 'chat-scheduler-'));
      const url = process.env.DATABASE_URL ?? `pglite://${dir}`;
      const open = async () => {
        const database = await openDatabase({ databaseUrl: url, dataDir: '.', poolMax: 2 });
        await migrateToLatest(database.db);
        return database;
      };
      try {
        const job = counting('test.restart');
        let database = await open();
        const before = new Scheduler({ database, logger: quiet, jobs: [job] });
        expect(ok(await before.runDue())).to.deep.equal([job.name]);
        await before.stop();
        await database.close();

        database = await open();
        const after = new Scheduler({ database, logger: quiet, jobs: [job] });
        expect(await after.runDue()).to.deep.equal([]);
        expect(job.runs).to.equal(1);

        // An instance claimed the job and died: its lease holds the job until it runs out.
        await database.asSystem((trx) =>
          trx
            .updateTable('scheduled_jobs')
            .set({ next_run_at: sql<Date>`now()`, locked_until: sql<Date>`now() + interval '10 minutes'`, lock_token: 'dead-instance' })
            .where('name', '=', job.name)
            .execute(),
        );
        expect(await after.runDue()).to.deep.equal([]);
        await database.asSystem((trx) =>
          trx.updateTable('scheduled_jobs').set({ locked_until: sql<Date>`now() - interval '1 second'` }).where('name', '=', job.name).execute(),
        );
        expect(ok(await after.runDue())).to.deep.equal([job.name]);
        expect(job.runs).to.equal(2);
        await after.stop();
        await database.close();
      } finally {
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    });

    it('stop() aborts the run in flight, waits for it, and runs nothing more', async () => {
      const { database } = await getHarness();
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const job: Job = {
        name: `test.long.${randomUUID().slice(0, 8)}`,
        intervalMs: HOUR,
        run: (_database, signal) =>
          new Promise((resolve) => {
            started();
            signal.addEventListener('abort', () => resolve('aborted'));
          }),
      };
      const scheduler = new Scheduler({ database, logger: quiet, jobs: [job], tickMs: 10 });
      scheduler.start();
      await running;
      await scheduler.stop();
      const row = await database.asSystem((trx) => trx.selectFrom('scheduled_jobs').select(['locked_until', 'last_finished_at']).where('name', '=', job.name).executeTakeFirstOrThrow());
      expect(row.locked_until).to.equal(null);
      expect(row.last_finished_at).to.be.instanceOf(Date);
      expect(await scheduler.runDue()).to.deep.equal([]);
    });

    it('refuses two jobs with one name', () => {
      const job = counting('test.twice');
      expect(() => new Scheduler({ database: {} as Database, logger: quiet, jobs: [job, job] })).to.throw(/two scheduled jobs/);
    });
  });
});
