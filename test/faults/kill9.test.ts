import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { recordFigure } from './figures.ts';
import { auditConversations, auditMessages, call, type LoadTenant, type SentMessage, sendMessage, ServiceProcess, setUpTenant, waitFor } from './support.ts';

const MESSAGE_WRITERS = 4;
const CONVERSATION_WRITERS = 4;
type Op = 'transfer' | 'close' | 'reopen';
const CYCLE: Op[] = ['transfer', 'close', 'reopen'];

interface OpRecord {
  conversationId: string;
  op: Op;
  status: number | 'no answer';
}

/**
 * Message writers on their own conversations, and conversation writers cycling transfer, close and
 * reopen on theirs; the service is killed with SIGKILL mid-load, started again on the same database,
 * then what was answered is compared with what is stored.
 */
async function killUnderLoad(suite: string, env: { DATABASE_URL?: string; DATA_DIR: string }, openAudit: () => Promise<Database>, before: { messages: number; ops: number }) {
  const first = await ServiceProcess.start(env);
  const tenant: LoadTenant = await setUpTenant(first.base, MESSAGE_WRITERS + CONVERSATION_WRITERS);
  const messageConversations = tenant.conversationIds.slice(0, MESSAGE_WRITERS);
  const cycled = tenant.conversationIds.slice(MESSAGE_WRITERS);
  const sent: SentMessage[] = [];
  const ops: OpRecord[] = [];
  const loading = () => first.alive;
  const workers = [
    ...messageConversations.map(async (conversationId) => {
      while (loading()) sent.push(await sendMessage(first.base, tenant, conversationId, randomUUID()));
    }),
    ...cycled.map(async (conversationId) => {
      for (let i = 0; loading(); i++) {
        const op = CYCLE[i % CYCLE.length]!;
        const res = await call(first.base, 'POST', `/api/v1/conversations/${conversationId}/${op}`, {
          token: tenant.token,
          ...(op === 'transfer' ? { body: { user_id: tenant.ownerId } } : {}),
        }).catch(() => undefined);
        ops.push({ conversationId, op, status: res?.status ?? 'no answer' });
        if (res && res.status !== 200) break;
      }
    }),
  ];
  const ok = (s: { status: number | string }) => s.status === 200 || s.status === 201;
  await waitFor('load before the kill', () => sent.filter(ok).length >= before.messages && ops.filter(ok).length >= before.ops, 120_000);
  await first.kill('SIGKILL');
  await Promise.all(workers);

  const restartedAt = Date.now();
  const second = await ServiceProcess.start(env);
  const restartMs = Date.now() - restartedAt;
  // Unanswered writes are retried with their keys, as a client would: replayed or made once, never twice.
  const retries: SentMessage[] = [];
  for (const s of sent.filter((x) => x.status === 'no answer')) retries.push(await sendMessage(second.base, tenant, s.conversationId, s.key));
  // The restarted service works on the conversations the kill interrupted.
  const after = await call(second.base, 'GET', `/api/v1/conversations/${cycled[0]}`, { token: tenant.token });
  await second.kill('SIGTERM');
  expect(second.exit, second.output).to.deep.equal({ code: 0, signal: null });

  const database = await openAudit();
  try {
    const all = [...sent, ...retries];
    const messages = await auditMessages(database, tenant.tenantId, all);
    const conversations = await auditConversations(database, tenant.tenantId, cycled);
    // Each conversation writer had at most one operation in flight when the process died.
    let opsLost = 0;
    let opsDoubled = 0;
    for (const id of cycled) {
      const mine = ops.filter((o) => o.conversationId === id);
      for (const [op, stored] of [['close', conversations.closes], ['reopen', conversations.reopens], ['transfer', conversations.transfers]] as const) {
        const answered = mine.filter((o) => o.op === op && o.status === 200).length;
        const inFlight = mine.filter((o) => o.op === op && o.status === 'no answer').length;
        opsLost += Math.max(0, answered - stored.get(id)!);
        opsDoubled += Math.max(0, stored.get(id)! - answered - inFlight);
      }
    }
    const unexpected = [...all, ...ops].filter((s) => typeof s.status === 'number' && !ok(s));
    recordFigure(suite, 'requests', all.length + ops.length);
    recordFigure(suite, '2xx', [...all, ...ops].filter(ok).length);
    recordFigure(suite, 'unanswered at the kill', [...sent, ...ops].filter((s) => s.status === 'no answer').length);
    recordFigure(suite, 'retries replayed (committed, answer lost)', retries.filter((r) => r.replayed).length);
    recordFigure(suite, 'restart to healthy (ms)', restartMs);
    recordFigure(suite, 'lost', messages.lost + opsLost);
    recordFigure(suite, 'doubled', messages.doubled + opsDoubled);
    recordFigure(suite, 'messages without exactly one event', messages.eventsWrong);
    recordFigure(suite, 'conversations half-changed', conversations.halfChanged.length);

    expect(unexpected.map((s) => s.status), 'answers other than 2xx').to.deep.equal([]);
    expect(retries.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.code}`)).to.deep.equal([]);
    expect(after.status).to.equal(200);
    expect(messages.lost + opsLost, 'lost').to.equal(0);
    expect(messages.doubled + opsDoubled, 'doubled').to.equal(0);
    expect(messages.eventsWrong, 'messages without exactly one message.created').to.equal(0);
    expect(conversations.halfChanged, 'conversations half-changed').to.deep.equal([]);
  } finally {
    await database.close();
  }
}

describe('kill -9 under write load', function () {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'chat-kill9-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('on PostgreSQL: after a restart, every 2xx write is there once, nothing doubled, no conversation half-changed', async function () {
    const databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      console.log('    (skipped: set DATABASE_URL for the PostgreSQL run)');
      return this.skip();
    }
    await killUnderLoad('kill -9, PostgreSQL', { DATABASE_URL: databaseUrl, DATA_DIR: dataDir }, () => openDatabase({ databaseUrl, dataDir: '.', poolMax: 2 }), { messages: 300, ops: 60 });
  });

  it('on the embedded database: the data directory opens again after kill -9 and the audit holds', async () => {
    // The killed process leaves its lock behind; the restart takes it over (its pid is gone).
    await killUnderLoad('kill -9, PGlite', { DATA_DIR: dataDir }, () => openDatabase({ databaseUrl: undefined, dataDir, poolMax: 1 }), { messages: 60, ops: 15 });
  });
});
