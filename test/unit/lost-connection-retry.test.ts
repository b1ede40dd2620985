import { expect } from 'chai';
import { type Tx, connectingAgain, retryingLostConnection } from '../../src/db/database.ts';
import { isConnectionError, isLostConnection } from '../../src/db/errors.ts';

// When a transaction runs again (src/db/database.ts, every withTenant and asSystem on PostgreSQL). The lost connection
// itself, cut by the server under a running transaction, is tried on PostgreSQL in
// test/integration/resilience.test.ts; here each case the retry must refuse, which a real server makes
// hard to time: a cut at the commit, and a connection never had.

const lost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
const cut = () => new Error('Connection terminated unexpectedly');
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6432'), { code: 'ECONNREFUSED' });
const trx = {} as Tx;

/** A transaction runner: `commit` decides what its commit does once fn has finished. */
function runner(commit: (attempt: number) => Promise<void> = async () => undefined) {
  let attempts = 0;
  const run = async <T>(fn: (trx: Tx) => Promise<T>): Promise<T> => {
    attempts += 1;
    const result = await fn(trx);
    await commit(attempts);
    return result;
  };
  return { run, attempts: () => attempts };
}

const outcome = <T>(p: Promise<T>) => p.then((value) => ({ value }), (error: unknown) => ({ error }));

describe('running a transaction again after a lost connection', () => {
  it('runs fn once more when its connection is lost while it runs, and answers the second run', async () => {
    const { run, attempts } = runner();
    let runs = 0;
    const answer = await retryingLostConnection(run, async () => {
      runs += 1;
      if (runs === 1) throw lost();
      return 'second';
    });
    expect(answer).to.equal('second');
    expect(runs).to.equal(2);
    expect(attempts()).to.equal(2);
  });

  it('runs it again while the loss lasts, within its budget', async () => {
    const { run } = runner();
    let runs = 0;
    const t0 = Date.now();
    const result = await outcome(
      retryingLostConnection(
        run,
        async () => {
          runs += 1;
          throw cut();
        },
        1000,
      ),
    );
    // After 250 ms, then 500 ms; the next pause (1 s) would pass the budget.
    expect(runs).to.equal(3);
    expect(Date.now() - t0).to.be.below(1000);
    expect(isLostConnection((result as { error: unknown }).error)).to.equal(true);
  });

  it('never runs again when the loss came at the commit (fn had finished: the outcome is unknown)', async () => {
    const { run } = runner(async () => {
      throw cut();
    });
    let runs = 0;
    const result = await outcome(retryingLostConnection(run, async () => void (runs += 1)));
    expect(runs).to.equal(1);
    expect(result).to.have.property('error');
  });

  it('never runs again when no connection could be had, before fn or at its first statement behind a pooler', async () => {
    let runs = 0;
    const before = await outcome(
      retryingLostConnection(
        async () => {
          throw refused();
        },
        async () => void (runs += 1),
      ),
    );
    expect(before).to.have.property('error');
    expect(runs).to.equal(0);
    const { run } = runner();
    const atFirst = await outcome(
      retryingLostConnection(run, async () => {
        runs += 1;
        throw Object.assign(new Error('sorry, too many clients already'), { code: '53300' });
      }),
    );
    expect(atFirst).to.have.property('error');
    expect(runs).to.equal(1);
  });

  it('never runs again on an error that is not a lost connection', async () => {
    const { run } = runner();
    let runs = 0;
    const result = await outcome(
      retryingLostConnection(run, async () => {
        runs += 1;
        throw Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
      }),
    );
    expect(runs).to.equal(1);
    expect(result).to.have.property('error');
  });

  it('tells a lost connection from one never had', () => {
    for (const err of [lost(), cut(), Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), new Error('outer', { cause: lost() })]) {
      expect(isLostConnection(err), err.message).to.equal(true);
    }
    const timeout = new Error('timeout exceeded when trying to connect');
    const aggregate = Object.assign(new AggregateError([refused(), refused()], 'connect failed'));
    for (const err of [refused(), timeout, aggregate, new Error('outer', { cause: refused() }), Object.assign(new Error('the database system is starting up'), { code: '57P03' })]) {
      expect(isConnectionError(err), err.message).to.equal(true);
      expect(isLostConnection(err), err.message).to.equal(false);
    }
  });
});

describe('connecting again when no connection could be had', () => {
  /** A runner whose first `refusals` attempts fail to connect (fn never runs), with `error`. */
  function refusing(refusals: number, error: () => Error = refused) {
    let attempts = 0;
    const run = async <T>(fn: (trx: Tx) => Promise<T>): Promise<T> => {
      attempts += 1;
      if (attempts <= refusals) throw error();
      return fn(trx);
    };
    return { run, attempts: () => attempts };
  }

  it('tries again while connecting is refused (a pooler restarting), and runs fn once when it connects', async () => {
    const { run, attempts } = refusing(2);
    let runs = 0;
    expect(await connectingAgain(run, async () => ++runs)).to.equal(1);
    expect(attempts()).to.equal(3);
  });

  it('gives up within its budget when connecting stays refused', async () => {
    const { run, attempts } = refusing(Infinity);
    const t0 = Date.now();
    const result = await outcome(connectingAgain(run, async () => 'never', 500));
    expect(result).to.have.property('error');
    expect(Date.now() - t0).to.be.below(500 + 100);
    expect(attempts()).to.be.within(2, 4);
  });

  it('never tries again once fn began, after a connect timeout, or on another error', async () => {
    let runs = 0;
    const lostInFn = await outcome(
      connectingAgain(runner().run, async () => {
        runs += 1;
        throw cut();
      }),
    );
    expect(lostInFn).to.have.property('error');
    expect(runs).to.equal(1);
    const timedOut = refusing(Infinity, () => new Error('timeout exceeded when trying to connect'));
    await outcome(connectingAgain(timedOut.run, async () => undefined));
    expect(timedOut.attempts()).to.equal(1);
    const other = refusing(Infinity, () => Object.assign(new Error('permission denied'), { code: '42501' }));
    await outcome(connectingAgain(other.run, async () => undefined));
    expect(other.attempts()).to.equal(1);
  });
});
