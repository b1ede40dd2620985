import { expect } from 'chai';
import type { Response } from 'supertest';

/** Asserts a problem+json answer with this status and code, in the one shape every error has. */
export function expectProblem(res: Response, status: number, code: string): Record<string, any> {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
  const body = typeof res.body === 'object' && Object.keys(res.body).length > 0 ? res.body : JSON.parse(res.text);
  expect(body).to.include({ status, code, type: `https://docs.customer-chat.dev/errors/${code}` });
  expect(body.title).to.be.a('string').and.not.empty;
  expect(body.detail).to.be.a('string').and.not.empty;
  expect(body.request_id).to.equal(res.headers['x-request-id']);
  const allowed = ['type', 'title', 'status', 'code', 'detail', 'request_id', 'errors'];
  expect(Object.keys(body).filter((k) => !allowed.includes(k))).to.deep.equal([]);
  return body;
}
