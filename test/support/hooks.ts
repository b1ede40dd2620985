// Loaded by mocha before any test file (.mocharc.json). Settings for the whole run, then the one
// shared harness is closed when every test has run.
import dns from 'node:dns';
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

export const mochaHooks = {
  async afterAll() {
    const { closeHarness } = await import('./harness.ts');
    await closeHarness();
  },
};
