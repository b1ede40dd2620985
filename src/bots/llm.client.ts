import { isIP } from 'node:net';
import { type Resolver, addressRefusal, filteringLookup } from '../delivery/transport.ts';

// node:http and node:https are taken with process.getBuiltinModule, not imported: an ESM import of node:http
// makes Node load its bundled undici (http.WebSocket) at start, tens of milliseconds of every restart.
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule('node:http');
const { Agent: HttpsAgent, request: httpsRequest } = process.getBuiltinModule('node:https');

// The built-in `llm` bot's call: one OpenAI-compatible chat completion. Any failure is an answer too
// (the bot hands off), so this never throws.

/** A reply that is exactly this asks for a person; so does a call of the tool `handoff`. */
export const HANDOFF_MARKER = '[HANDOFF]';

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful customer support assistant. Answer briefly. When you cannot help, or the visitor asks for a person, call the tool handoff.';

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export type LlmOutcome = { kind: 'reply'; content: string } | { kind: 'handoff'; reason: string };

/** The model's answer is read up to this much; a longer one is a failure. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

const HANDOFF_TOOL = {
  type: 'function',
  function: {
    name: 'handoff',
    description: 'Hand the conversation over to a human agent.',
    parameters: { type: 'object', properties: { reason: { type: 'string' } } },
  },
};

export interface LlmClient {
  complete(settings: { base_url: string; model: string; api_key: string; timeout_ms: number }, messages: ChatTurn[]): Promise<LlmOutcome>;
  close(): void;
}

/**
 * Posts under the webhook deliveries' address rule and filter (no loopback, private, link-local or
 * metadata address, nor an IPv6 address carrying one, unless allowPrivate): an address in the URL is judged
 * before the request, a name by the agents' lookup before connecting. Never follows redirects, and gives
 * up after the bot's timeout, which covers the whole exchange.
 */
export function createLlmClient(options: { allowPrivate: boolean; resolve?: Resolver }): LlmClient {
  // request-filtering-agent, used before, judged an IPv4-compatible [::127.0.0.1] public.
  const lookup = options.allowPrivate ? {} : { lookup: filteringLookup(options.resolve) };
  const agents = { http: new HttpAgent({ keepAlive: true, ...lookup }), https: new HttpsAgent({ keepAlive: true, ...lookup }) };
  return {
    complete: (settings, messages) =>
      new Promise<LlmOutcome>((resolve) => {
        let target: URL;
        try {
          target = new URL(`${settings.base_url.replace(/\/+$/, '')}/chat/completions`);
        } catch {
          resolve({ kind: 'handoff', reason: 'the base URL is not valid' });
          return;
        }
        const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
        const refusal = options.allowPrivate || !isIP(host) ? undefined : addressRefusal(host);
        if (refusal) {
          resolve({ kind: 'handoff', reason: `the base URL is not allowed: ${refusal}` });
          return;
        }
        const secure = target.protocol === 'https:';
        const body = JSON.stringify({ model: settings.model, messages, tools: [HANDOFF_TOOL] });
        const signal = AbortSignal.timeout(settings.timeout_ms);
        const req = (secure ? httpsRequest : httpRequest)(
          target,
          {
            method: 'POST',
            agent: secure ? agents.https : agents.http,
            headers: {
              'content-type': 'application/json',
              'content-length': String(Buffer.byteLength(body)),
              authorization: `Bearer ${settings.api_key}`,
              'user-agent': 'customer-chat-bots/1',
            },
            signal,
          },
          (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (chunk: Buffer) => {
              size += chunk.length;
              if (size > MAX_RESPONSE_BYTES) res.destroy(new Error('the answer is too large'));
              else chunks.push(chunk);
            });
            res.on('error', (err) => resolve({ kind: 'handoff', reason: signal.aborted ? `no answer within ${settings.timeout_ms} ms` : err.message }));
            res.on('end', () => {
              const status = res.statusCode ?? 0;
              if (status < 200 || status >= 300) {
                resolve({ kind: 'handoff', reason: `the model answered ${status}` });
                return;
              }
              resolve(readCompletion(Buffer.concat(chunks).toString('utf8')));
            });
          },
        );
        req.on('error', (err) => resolve({ kind: 'handoff', reason: signal.aborted ? `no answer within ${settings.timeout_ms} ms` : err.message }));
        req.end(body);
      }),
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** The first choice's message: a `handoff` tool call or the marker hands off; text is the reply; anything else failed. */
export function readCompletion(text: string): LlmOutcome {
  let parsed: { choices?: { message?: { content?: unknown; tool_calls?: { function?: { name?: unknown } }[] } }[] };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    return { kind: 'handoff', reason: 'the model answered something that is not JSON' };
  }
  const message = parsed.choices?.[0]?.message;
  if (!message) return { kind: 'handoff', reason: 'the model answered no choice' };
  if (message.tool_calls?.some((call) => call.function?.name === 'handoff')) return { kind: 'handoff', reason: 'the model called handoff' };
  const content = typeof message.content === 'string' ? message.content.trim() : '';
  if (content === HANDOFF_MARKER) return { kind: 'handoff', reason: 'the model answered the handoff marker' };
  if (content === '') return { kind: 'handoff', reason: 'the model answered nothing' };
  return { kind: 'reply', content: content.slice(0, 10_000) };
}
