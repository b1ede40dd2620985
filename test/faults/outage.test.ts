import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { recordFigure } from './figures.ts';
import { auditMessages, call, type LoadTenant, type SentMessage, sendMessage, ServiceProcess, setUpTenant, TcpProxy, waitFor } from './support.ts';

const SUITE = 'database outage';
const WRITERS = 8;

describe('a database outage under write load', function () {
  const databaseUrl = process.env.DATABASE_URL;
  let proxy: TcpProxy;
  let service: ServiceProcess | undefined;
  let direct: Database;
  let dataDir: string;

  before(async function () {
    if (!databaseUrl) {
      console.log('    (skipped: the outage test needs PostgreSQL; set DATABASE_URL)');
      return this.skip();
    }
    const target = new URL(databaseUrl);
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
    dataDir = await mkdtemp(join(tmpdir(), 'chat-outage-'));
    direct = await openDatabase({ databaseUrl, dataDir: '.', poolMax: 2 });
  });

  after(async () => {
    await service?.kill('SIGTERM');
    await proxy?.stop();
    await direct?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('stays up, answers 503 with Retry-After while PostgreSQL is unreachable, recovers, and keeps every 2xx write exactly once', async () => {
    service = await ServiceProcess.start({ DATABASE_URL: proxy.urlFor(databaseUrl!), DATA_DIR: dataDir });
    const tenant: LoadTenant = await setUpTenant(service.base, WRITERS);
    const sent: SentMessage[] = [];
    const ok = () => sent.filter((s) => s.status === 201).length;
    const unavailable = () => sent.filter((s) => s.status === 503).length;
    let loading = true;
    const writers = tenant.conversationIds.map(async (conversationId) => {
      while (loading) sent.push(await sendMessage(service!.base, tenant, conversationId, randomUUID()));
    });

    await waitFor('writes before the outage', () => ok() >= 100);
    const okBefore = ok();
    await proxy.stop();
    const cutAt = Date.now();
    await waitFor('503 answers during the outage', () => unavailable() >= 50);
    const ready = await call(service.base, 'GET', '/api/ready');
    // The outage lasts a few seconds of continuous load: the fault, not a wait for a result.
    await waitFor('a few seconds of outage', () => Date.now() - cutAt >= 3000);
    const okDuring = ok() - okBefore;
    await proxy.start();
    const restoredAt = Date.now();
    const okAtRestore = ok();
    await waitFor('writes after the database is back', () => ok() >= okAtRestore + 100);
    const recoveredInMs = Date.now() - restoredAt;
    loading = false;
    await Promise.all(writers);
    const readyAfter = await call(service.base, 'GET', '/api/ready');

    // A 503 may hide a commit whose answer was lost: the client retries with its key, and must get
    // that message back (replayed) or a new one, never two.
    const retries: SentMessage[] = [];
    const toRetry = sent.filter((x) => x.status === 503);
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let s = toRetry.shift(); s; s = toRetry.shift()) retries.push(await sendMessage(service!.base, tenant, s.conversationId, s.key));
      }),
    );

    const all = [...sent, ...retries];
    const audit = await auditMessages(direct, tenant.tenantId, all);
    const otherErrors = all.filter((s) => s.status === 'no answer' || (typeof s.status === 'number' && s.status >= 500 && s.status !== 503));
    recordFigure(SUITE, 'requests', all.length);
    recordFigure(SUITE, '2xx', all.filter((s) => s.status === 201).length);
    recordFigure(SUITE, '503', unavailable());
    recordFigure(SUITE, '5xx other or no answer', otherErrors.length);
    recordFigure(SUITE, '503s retried', retries.length);
    recordFigure(SUITE, 'retries replayed (committed, answer lost)', retries.filter((r) => r.replayed).length);
    recordFigure(SUITE, 'recovery after restore (ms)', recoveredInMs);
    recordFigure(SUITE, 'lost', audit.lost);
    recordFigure(SUITE, 'doubled', audit.doubled);
    recordFigure(SUITE, 'messages without exactly one event', audit.eventsWrong);

    expect(service.alive, service.output).to.equal(true);
    expect(otherErrors.map((s) => `${s.status} ${s.code}`), service.output).to.deep.equal([]);
    expect(sent.filter((s) => s.status === 503 && !/^\d+$/.test(s.retryAfter ?? ''))).to.deep.equal([]);
    expect(sent.filter((s) => s.status === 503 && s.code !== 'ERR_UNAVAILABLE')).to.deep.equal([]);
    expect(ready.status, 'ready during the outage').to.equal(503);
    expect(readyAfter.status, 'ready after it').to.equal(200);
    expect(okDuring, 'writes answered 2xx while the database was cut').to.be.at.most(WRITERS);
    expect(retries.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.code}`)).to.deep.equal([]);
    expect(audit.lost, 'lost').to.equal(0);
    expect(audit.doubled, 'doubled').to.equal(0);
    expect(audit.eventsWrong, 'messages without exactly one message.created').to.equal(0);
    expect(audit.stored).to.equal(new Set(all.filter((s) => s.status === 201).map((s) => s.messageId)).size);
  });
});
