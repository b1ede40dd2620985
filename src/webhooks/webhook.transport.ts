import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { HMAC } from 'fast-sha256';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
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
 * than the hashing itself, though a microbenchmark of the two favoured it: in bench:webhooks, alternating
 * runs, the dispatcher reached 0.71 to 0.76 of the bare loop with this signer against 0.64 to 0.69 with
 * createHmac (and 0.74 to 0.77 with no signing at all).
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

/**
 * Why an address may not be reached, or undefined when it may: only public unicast addresses pass
 * (no loopback, private, link-local — where cloud metadata lives —, carrier-grade NAT, unspecified,
 * multicast or reserved; an IPv4 address mapped into IPv6 is judged as itself). The agents below apply
 * the same rule to every address a name resolves to, at connect time.
 */
export function addressRefusal(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
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
  secure: boolean;
  protocol: string;
  hostname: string;
  port: string;
  path: string;
  auth?: string;
}

/** The request options of a URL, or why it cannot be posted to. */
function parseTarget(url: string): Target | string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the URL is not valid';
  }
  const secure = parsed.protocol === 'https:';
  if (!secure && parsed.protocol !== 'http:') return `the scheme ${parsed.protocol} is not allowed`;
  // An IPv6 literal is bracketed in a URL, not in a hostname option.
  const hostname = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const auth = parsed.username || parsed.password ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : undefined;
  return { secure, protocol: parsed.protocol, hostname, port: parsed.port, path: `${parsed.pathname}${parsed.search}`, ...(auth ? { auth } : {}) };
}

/** What is read of a receiver's answer: its status matters, its body does not. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * Posts with node:http, which never follows redirects (a 3xx is a failure like any non-2xx), through
 * agents that refuse non-public addresses unless `allowPrivate`, and keep connections alive for the
 * next delivery to the same receiver. The timeout covers the whole exchange.
 */
export function createTransport(options: { allowPrivate: boolean; timeoutMs: number }): Transport {
  const filter = { allowPrivateIPAddress: options.allowPrivate, allowMetaIPAddress: options.allowPrivate };
  const agents = {
    http: new RequestFilteringHttpAgent({ keepAlive: true, maxSockets: 64, ...filter }),
    https: new RequestFilteringHttpsAgent({ keepAlive: true, maxSockets: 64, ...filter }),
  };
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
  return {
    post: (url, headers, body) =>
      new Promise<PostOutcome>((resolve) => {
        const target = targetOf(url);
        if (typeof target === 'string') {
          resolve({ statusCode: null, error: target });
          return;
        }
        let settled = false;
        const settle = (outcome: PostOutcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(outcome);
        };
        const send = target.secure ? httpsRequest : httpRequest;
        const req = send(
          {
            protocol: target.protocol,
            hostname: target.hostname,
            port: target.port,
            path: target.path,
            ...(target.auth ? { auth: target.auth } : {}),
            method: 'POST',
            agent: target.secure ? agents.https : agents.http,
            headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          },
          (res) => {
            const statusCode = res.statusCode ?? 0;
            let read = 0;
            res.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read > MAX_RESPONSE_BYTES) res.destroy();
            });
            const done = () =>
              settle(statusCode >= 200 && statusCode < 300 ? { statusCode, error: null } : { statusCode, error: `the receiver answered ${statusCode}` });
            res.on('end', done);
            res.on('close', done);
            res.on('error', done);
          },
        );
        // One plain timer for the whole exchange: AbortSignal.timeout's machinery was 4% of a backlog's drain.
        const timer = setTimeout(() => {
          settle({ statusCode: null, error: `no answer within ${options.timeoutMs} ms` });
          req.destroy();
        }, options.timeoutMs);
        req.on('error', (err: Error & { code?: string }) => {
          const error = /is not allowed/.test(err.message) ? `refused: ${err.message}` : `${err.code ?? 'error'}: ${err.message}`;
          settle({ statusCode: null, error });
        });
        req.end(body);
      }),
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
