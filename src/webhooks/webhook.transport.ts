import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { Webhook as StandardWebhook } from 'standardwebhooks';

// Signing and posting, nothing else: what a delivery is and when it is retried is the dispatcher's.

const keys = new Map<string, Buffer>();

/** The HMAC key of a `whsec_` secret, as standardwebhooks reads it (and refuses what it refuses). */
function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 10_000) keys.clear();
    new StandardWebhook(secret);
    key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

/**
 * A `v1,<base64>` signature byte for byte as standardwebhooks' `sign` makes it (HMAC-SHA256 of
 * "{id}.{seconds}.{body}" in UTF-8), with node:crypto: the library hashes in JavaScript, several times slower.
 */
export function signature(secret: string, messageId: string, at: Date, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${messageId}.${Math.floor(at.getTime() / 1000)}.${body}`).digest('base64')}`;
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
