import { expect } from 'chai';
import request from 'supertest';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

describe('health', () => {
  it('GET /api/health answers 200 without credentials', async () => {
    const { app } = await getHarness();
    const res = await request(app).get('/api/health').expect(200);
    expect(res.body).to.deep.equal({ status: 'ok' });
  });

  it('GET /api/ready answers 200 when the database answers', async () => {
    const { app } = await getHarness();
    const res = await request(app).get('/api/ready').expect(200);
    expect(res.body).to.deep.equal({ status: 'ok', checks: { database: 'ok' } });
  });

  it('GET /api/ready answers 503 ERR_UNAVAILABLE from the moment the instance starts shutting down', async () => {
    const h = await getHarness();
    let draining = false;
    const app = h.appWith({}, { draining: () => draining });
    await request(app).get('/api/ready').expect(200);
    draining = true;
    const res = await request(app).get('/api/ready');
    const body = expectProblem(res, 503, 'ERR_UNAVAILABLE');
    expect(res.headers['retry-after']).to.equal('1');
    expect(body.detail).to.contain('shutting down');
    // Liveness is another question: the process is fine, it is leaving.
    await request(app).get('/api/health').expect(200);
  });

  it('GET /api/ready answers 503 ERR_UNAVAILABLE with Retry-After when the database does not', async () => {
    const h = await getHarness();
    const broken = {
      ...h.database,
      ping: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      },
    };
    const res = await request(h.appWith({}, { database: broken })).get('/api/ready');
    const body = expectProblem(res, 503, 'ERR_UNAVAILABLE');
    expect(res.headers['retry-after']).to.equal('5');
    expect(body.detail).not.to.contain('ECONNREFUSED');
  });
});
