// Loaded by mocha before any test file (.mocharc.json). Settings for the whole run, then the one
// shared harness is closed when every test has run.
import dns from 'node:dns';
import http from 'node:http';
import { isIP } from 'node:net';

process.env.NODE_ENV = 'test';

// Tests send traffic to loopback only, never anywhere else, not even a DNS query by mistake (an endpoint
// another test left with an example URL, a fuzzed one): names other than localhost do not resolve here.
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain']);
const refused = (host: string) => Object.assign(new Error(`tests resolve no names beyond loopback: ${host}`), { code: 'ENOTFOUND', hostname: host });
const realLookup = dns.lookup;
const realPromisesLookup = dns.promises.lookup;
const allowed = (host: string) => isIP(host) !== 0 || LOOPBACK_NAMES.has(host.toLowerCase());
(dns as { lookup: unknown }).lookup = (host: string, options: unknown, callback?: unknown) => {
  const cb = (typeof options === 'function' ? options : callback) as (err: Error) => void;
  if (allowed(host)) return (realLookup as (...args: unknown[]) => void)(host, options, callback);
  process.nextTick(() => cb(refused(host)));
};
(dns.promises as { lookup: unknown }).lookup = (host: string, options?: unknown) =>
  allowed(host) ? (realPromisesLookup as (...args: unknown[]) => Promise<unknown>)(host, options) : Promise.reject(refused(host));
process.env.LOG_LEVEL ??= 'silent';
process.env.BCRYPT_COST ??= '4';

// Every answer of every test is held against its operation's declared responses: a status the contract
// does not declare is one a validating proxy refuses and a generated client has no type for. The run
// fails at its end with the list. What the request matched is on it once the validator's route lookup ran:
// answers given before it are not checked here (plain HTTP refused in production, test/integration/https.test.ts holds
// that 403 declared; the billing webhook's raw body over its limit; CORS preflights), nor answers to paths
// outside the contract, 404 and 405 among them, which name no operation.
const undeclared = new Map<string, number>();
const writeHead = http.ServerResponse.prototype.writeHead;
http.ServerResponse.prototype.writeHead = function (this: http.ServerResponse, statusCode: number, ...rest: unknown[]) {
  const openapi = (this.req as { openapi?: { openApiRoute?: string; schema?: { responses?: Record<string, unknown> } } } | undefined)?.openapi;
  const responses = openapi?.schema?.responses;
  if (responses && !declaresStatus(Object.keys(responses), statusCode)) {
    const key = `${statusCode} from ${this.req.method} ${openapi.openApiRoute}`;
    undeclared.set(key, (undeclared.get(key) ?? 0) + 1);
  }
  return (writeHead as (...args: unknown[]) => http.ServerResponse).call(this, statusCode, ...rest);
} as typeof writeHead;

/** Whether responses keyed as in the contract ('200', '4XX', 'default') cover the status. */
export const declaresStatus = (declared: string[], status: number) =>
  declared.some((r) => r === 'default' || r === String(status) || r === `${String(status)[0]}XX`);

export const mochaHooks = {
  // The integration tier makes each file's database before its tests, with time for it (migrations on a
  // busy machine, two workers at once), so that no test's own timeout pays for it.
  async beforeAll(this: Mocha.Context) {
    if (process.env.CHAT_TEST_WARM_HARNESS !== '1') return;
    this.timeout(180_000);
    const { getHarness } = await import('./harness.ts');
    await getHarness();
  },
  // In parallel mode root hooks run for each file, in the worker that runs it.
  async afterAll() {
    const { closeHarness } = await import('./harness.ts');
    await closeHarness();
    if (undeclared.size > 0) {
      const found = [...undeclared];
      undeclared.clear();
      throw new Error(`answers their operation does not declare (status from operation: times):\n  ${found.map(([k, n]) => `${k}: ${n}`).join('\n  ')}`);
    }
  },
};
