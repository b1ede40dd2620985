import { expect } from 'chai';
import type { KyselyPlugin } from 'kysely';
import request from 'supertest';
import type { Database } from '../src/db/database.ts';
import { SessionCache } from '../src/auth/session-cache.ts';
import { createConversation, createTenant } from './support/factories.ts';
import { getHarness } from './support/harness.ts';

// What one request costs the database, counted rather than timed: transactions, and the statements sent
// (each a round trip; a transaction adds three of its own: begin, setting the role and tenant, commit).

interface Tally {
  transactions: number;
  statements: string[];
}

/** The harness's database, counting what goes through it: every transaction, every statement Kysely sends. */
function counting(inner: Database, tally: Tally): Database {
  // Counted when a result comes back: Kysely also passes a subquery through transformQuery as it is built
  // (the list page's total is one), but only what is executed comes back.
  const kinds = new WeakMap<object, string>();
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      kinds.set(args.queryId, args.node.kind);
      return args.node;
    },
    transformResult: async (args) => {
      tally.statements.push(kinds.get(args.queryId) ?? 'unknown');
      return args.result;
    },
  };
  return {
    ...inner,
    db: inner.db.withPlugin(plugin),
    withTenant: (tenantId, fn, options) => {
      tally.transactions++;
      return inner.withTenant(tenantId, (trx) => fn(trx.withPlugin(plugin)), options);
    },
    asSystem: (fn) => {
      tally.transactions++;
      return inner.asSystem((trx) => fn(trx.withPlugin(plugin)));
    },
  };
}

describe('round trips per request (session cache warm)', () => {
  const tally: Tally = { transactions: 0, statements: [] };
  const cold: number[] = [];

  async function measure(send: () => Promise<unknown>) {
    tally.transactions = 0;
    await send(); // warms the session cache (and anything else a first request fills)
    cold.push(tally.transactions);
    tally.transactions = 0;
    tally.statements = [];
    await send();
    return { transactions: tally.transactions, statements: tally.statements.length, roundTrips: tally.statements.length + 3 * tally.transactions };
  }

  it('GET /v1/conversations, GET /v1/conversations/{id} and POST /v1/messages each run one transaction', async () => {
    const h = await getHarness();
    const app = h.appWith({}, { database: counting(h.database, tally), sessions: new SessionCache() });
    const t = await createTenant();
    const c = await createConversation(t);
    const auth = { Authorization: `Bearer ${t.owner.accessToken}` };

    // The page, with its exact total (from the counter rows) in the same statement.
    const list = await measure(() => request(app).get('/api/v1/conversations?status=open').set(auth).expect(200));
    expect(list).to.deep.equal({ transactions: 1, statements: 1, roundTrips: 4 });

    const one = await measure(() => request(app).get(`/api/v1/conversations/${c.id}`).set(auth).expect(200));
    expect(one).to.deep.equal({ transactions: 1, statements: 1, roundTrips: 4 });

    const post = await measure(() => request(app).post('/api/v1/messages').set(auth).send({ conversation_id: c.id, content: 'hello' }).expect(201));
    expect(post.transactions).to.equal(1);
    // Lock the conversation, the message, the sender's read mark, the conversation's last message and
    // its count (one statement), the event.
    expect(post.statements, tally.statements.join(' ')).to.equal(5);
    // Cold, the login and membership check is a transaction of its own: the tally sees it.
    expect(cold).to.deep.equal([2, 1, 1]);
  });
});
