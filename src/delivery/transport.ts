import { type LookupAddress, type LookupAllOptions, lookup as dnsLookup } from 'node:dns';
import { type LookupFunction, isIP } from 'node:net';
import { HMAC } from 'fast-sha256';
import ipaddr from 'ipaddr.js';
import type { Dispatcher } from 'undici';
import { Webhook as StandardWebhook } from 'standardwebhooks';

// Signing and posting, nothing else: what a delivery is and when it is retried is the dispatcher's.

/**
 * Per secret, an HMAC with the key's pads already hashed: reset() brings it back to that state. About
 * 2.7 KB each (two hash states and their saved copies), so at most a thousand are kept; making one again
 * costs a key's setup.
 */
const signers = new Map<string, HMAC>();
const MAX_SIGNERS = 1_000;

/** The HMAC of a `whsec_` secret, as standardwebhooks reads the key (and refuses what it refuses). */
function signerOf(secret: string): HMAC {
  let signer = signers.get(secret);
  if (!signer) {
    if (signers.size >= MAX_SIGNERS) signers.clear();
    new StandardWebhook(secret);
    signer = new HMAC(Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64'));
    signers.set(secret, signer);
  }
  return signer;
}

const encoder = new TextEncoder();
/**
 * What is signed, as UTF-8, reused (signing is synchronous) for a message whose worst case fits, three
 * bytes per UTF-16 code unit: up to 21,845 units. A longer one gets a buffer of its own.
 */
const scratch = new Uint8Array(64 * 1024);
const digest = Buffer.alloc(32);

/**
 * A `v1,<base64>` signature byte for byte as standardwebhooks' `sign` makes it: HMAC-SHA256 of
 * "{id}.{seconds}.{body}" in UTF-8, with the JavaScript SHA-256 it uses (fast-sha256), but with each key's
 * HMAC state kept instead of made anew. node:crypto's createHmac, made per signature, was dearer in place
 * than the hashing itself, though a microbenchmark of the two favoured it (bench:webhooks, alternating runs
 * of the dispatcher with each signer, and with none).
 */
export function signature(secret: string, messageId: string, at: Date, body: string): string {
  const text = `${messageId}.${Math.floor(at.getTime() / 1000)}.${body}`;
  // At most three bytes of UTF-8 per UTF-16 code unit.
  const bytes = text.length * 3 <= scratch.length ? scratch.subarray(0, encoder.encodeInto(text, scratch).written) : encoder.encode(text);
  signerOf(secret).reset().update(bytes).finish(digest);
  return `v1,${digest.toString('base64')}`;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` holds one `v1,<base64>` per secret
 * (two during a rotation's overlap), space-separated, which every standardwebhooks verifier accepts.
 */
export function signedHeaders(messageId: string, body: string, secrets: string[], at = new Date()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'customer-chat-webhooks/1',
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => signature(secret, messageId, at, body)).join(' '),
  };
}

/** The IPv6 forms that carry an IPv4 address, by ipaddr.js's name for their range. */
const CARRIERS = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/**
 * The IPv4 addresses an IPv6 address carries, where a host or a relay would take them out and connect
 * there: IPv4-compatible ::/96 (deprecated, still parsed), mapped ::ffff:0:0/96, translated ::ffff:0:0:0/96,
 * NAT64's 64:ff9b::/96, 6to4's 2002::/16 (bits 16-47) and Teredo's 2001::/32 (its server in bits 32-63,
 * its client in the last 32 bits, inverted). Undefined for an address that carries none, and for NAT64's
 * local-use 64:ff9b:1::/48, whose IPv4 address may sit anywhere and whose translator is local anyway.
 */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = address.parts;
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [ipv4Of(p[6]!, p[7]!)];
    case 'rfc6052':
      return p[2] === 0 ? [ipv4Of(p[6]!, p[7]!)] : undefined;
    case '6to4':
      return [ipv4Of(p[1]!, p[2]!)];
    case 'teredo':
      return [ipv4Of(p[2]!, p[3]!), ipv4Of(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
    default:
      // ::/96 less :: and ::1, which ipaddr.js names (unspecified, loopback) and which are refused as such.
      return p.slice(0, 6).every((part) => part === 0) && address.range() === 'unicast' ? [ipv4Of(p[6]!, p[7]!)] : undefined;
  }
}

/**
 * Why an address may not be reached, or undefined when it may: only public unicast addresses pass
 * (no loopback, private, link-local — where cloud metadata lives —, carrier-grade NAT, unspecified,
 * multicast or reserved). An IPv6 address that carries an IPv4 address (see carriedIPv4) is judged by what
 * it carries, every one of them for Teredo: a NAT64 address of a public host passes (an IPv6-only host
 * behind DNS64 sees only those), `[::127.0.0.1]` or a 6to4 address of 169.254.169.254 does not. The
 * transport below applies the same rule to every address a name resolves to, at connect time.
 */
export function addressRefusal(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (parsed.kind() === 'ipv6') {
    const carried = carriedIPv4(parsed as ipaddr.IPv6);
    if (carried) {
      for (const ipv4 of carried) {
        const inner = ipv4.range();
        if (inner !== 'unicast') return `the address ${address} carries ${ipv4.toString()}, which is ${inner}, not public`;
      }
      return undefined;
    }
    if (CARRIERS.has(range)) return `the address ${address} is ${range}, not public`;
  }
  return range === 'unicast' ? undefined : `the address ${address} is ${range}, not public`;
}

export interface PostOutcome {
  /** The receiver's status, when it answered. */
  statusCode: number | null;
  /** Why the attempt failed (no 2xx), or null on success. */
  error: string | null;
}

export interface Transport {
  post(url: string, headers: Record<string, string>, body: string): Promise<PostOutcome>;
  close(): void;
}

interface Target {
  origin: string;
  path: string;
  /** From the URL's credentials: Basic, as browsers and node:http send them. */
  authorization?: string;
}

/** The request options of a URL, or why it cannot be posted to. */
function parseTarget(url: string): Target | string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the URL is not valid';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `the scheme ${parsed.protocol} is not allowed`;
  let credentials: string | undefined;
  try {
    if (parsed.username || parsed.password) credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  } catch {
    // The URL parser keeps an escape like %zz as it is; it decodes to nothing.
    return 'the URL is not valid';
  }
  return {
    origin: parsed.origin,
    path: `${parsed.pathname}${parsed.search}`,
    ...(credentials ? { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` } : {}),
  };
}

/** What is read of a receiver's answer: its status matters, its body does not. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** A connection the address filter refused: nothing was sent. */
export class AddressRefused extends Error {}

/** Every address of a name, as dns.lookup answers with `all: true`. */
export type Resolver = (hostname: string, options: LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * A lookup for net.connect that fails when any address the name resolves to is not public: net.connect
 * asks it before connecting, so a refused address is never contacted, and what is judged is what is
 * connected to (no second resolution that an attacker's DNS could answer differently).
 */
export function filteringLookup(resolve: Resolver = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      for (const { address } of addresses) {
        const refusal = addressRefusal(address);
        if (refusal) return callback(new AddressRefused(`${hostname}: ${refusal}`), '', 0);
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) (callback as unknown as (err: null, addresses: LookupAddress[]) => void)(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * undici's connector behind the address filter: an IP literal is judged before connecting (net.connect
 * looks nothing up for one), a name through filteringLookup.
 */
function filteringConnector(build: Undici['buildConnector'], timeoutMs: number, resolve?: Resolver): ReturnType<Undici['buildConnector']> {
  const connect = build({ timeout: timeoutMs, allowH2: false, lookup: filteringLookup(resolve) });
  return (options, callback) => {
    const refusal = isIP(options.hostname) ? addressRefusal(options.hostname) : undefined;
    if (refusal) return callback(new AddressRefused(refusal), null);
    return connect(options, callback);
  };
}

type Undici = typeof import('undici');
/**
 * Loaded at the first post, not at the start: the package loads its whole module graph (fetch, caches,
 * mocks), and a start that delivers nothing yet needs none of it.
 */
let undici: Promise<Undici> | undefined;

/**
 * Posts with undici's dispatcher, which follows no redirect (a 3xx is a failure like any non-2xx), refuses
 * non-public addresses unless `allowPrivate`, and keeps connections alive for the next delivery to the same
 * receiver. The timeout covers the whole exchange. It costs the service less CPU per delivery than
 * node:http did, and its drains keep pace with the bare node:http loop (bench:webhooks, runs in turn).
 */
export function createTransport(options: {
  allowPrivate: boolean;
  timeoutMs: number;
  /** How names are resolved: dns.lookup, or what a test says a name resolves to. */
  resolve?: Resolver;
}): Transport {
  let agent: Promise<Dispatcher> | undefined;
  /** The agent once made: posts after the first do not wait on its promise. */
  let ready: Dispatcher | undefined;
  const agentOf = (): Promise<Dispatcher> =>
    (agent ??= (undici ??= import('undici')).then(
      (u) =>
        new u.Agent({
          connections: 64,
          // Said to the pool too: behind a connector function it cannot see it, and it would open an https
          // origin's first connection alone until one proved to be HTTP/1.1.
          allowH2: false,
          connect: options.allowPrivate ? { timeout: options.timeoutMs, allowH2: false } : filteringConnector(u.buildConnector, options.timeoutMs, options.resolve),
        }),
    ));
  // An endpoint's URL is parsed once, not per attempt: a backlog's drain spent 4% of its time there.
  const targets = new Map<string, Target | string>();
  const targetOf = (url: string): Target | string => {
    let target = targets.get(url);
    if (target === undefined) {
      if (targets.size >= 10_000) targets.clear();
      target = parseTarget(url);
      targets.set(url, target);
    }
    return target;
  };
  let closed = false;
  return {
    post: async (url, headers, body) => {
      const target = targetOf(url);
      if (typeof target === 'string') return { statusCode: null, error: target };
      if (closed) return { statusCode: null, error: 'the transport is closed' };
      let dispatcher = ready;
      if (!dispatcher) {
        try {
          dispatcher = ready = await agentOf();
        } catch (err) {
          // Not kept: the next post tries again.
          agent = undefined;
          undici = undefined;
          return { statusCode: null, error: `error: ${(err as Error).message}` };
        }
      }
      return new Promise<PostOutcome>((resolve) => {
        let settled = false;
        let controller: Dispatcher.DispatchController | undefined;
        let statusCode: number | null = null;
        let read = 0;
        const settle = (outcome: PostOutcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(outcome);
        };
        const answered = () =>
          settle(statusCode! >= 200 && statusCode! < 300 ? { statusCode, error: null } : { statusCode, error: `the receiver answered ${statusCode}` });
        // One plain timer for the whole exchange: AbortSignal.timeout's machinery was 4% of a backlog's drain.
        const timer = setTimeout(() => {
          settle({ statusCode: null, error: `no answer within ${options.timeoutMs} ms` });
          controller?.abort(new Error('timed out'));
        }, options.timeoutMs);
        // Never throws for an object handler: a header it refuses, or a closed agent, ends in onResponseError.
        dispatcher.dispatch(
          { origin: target.origin, path: target.path, method: 'POST', headers: target.authorization ? { ...headers, authorization: target.authorization } : headers, body },
          {
            onRequestStart: (c) => {
              controller = c;
              // Timed out while queued or connecting: nothing is sent (the abort costs the socket it got).
              if (settled) c.abort(new Error('timed out'));
            },
            onResponseStart: (_c, status) => {
              // 1xx (103 Early Hints) come before the answer: a connection closed after one was not answered.
              if (status >= 200) statusCode = status;
            },
            onResponseData: (c, chunk) => {
              read += chunk.length;
              if (read > MAX_RESPONSE_BYTES) c.abort(new Error('the answer is too long'));
            },
            onResponseEnd: answered,
            onResponseError: (_c, err: Error & { code?: string }) => {
              // Cut short past MAX_RESPONSE_BYTES, or closed mid-body: the status is what counts.
              if (statusCode !== null) return answered();
              settle({ statusCode: null, error: err instanceof AddressRefused ? `refused: ${err.message}` : `${err.code ?? 'error'}: ${err.message}` });
            },
          },
        );
      });
    },
    close: () => {
      closed = true;
      void agent?.then((a) => a.destroy()).catch(() => undefined);
    },
  };
}
