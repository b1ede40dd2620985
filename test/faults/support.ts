// What the fault tests share: the service as a real child process, a TCP proxy in front of PostgreSQL
// that a test cuts and restores, a small HTTP client, and the audit of what the database holds.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { VISITOR_NOTICES } from '../../src/conversations/conversation.service.ts';
import { TEST_JWT_SECRET } from '../support/harness.ts';

export const ROOT = new URL('../../', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls condition until it holds; fails naming what it waited for. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Pipes a loopback port to PostgreSQL; stop() refuses new connections and cuts the open ones. */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.#target.port, this.#target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }

  /** The URL that reaches the database through this proxy. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }
}

/** The service as `node src/server.ts`, the way it runs in production. */
export class ServiceProcess {
  readonly child: ChildProcess;
  readonly base: string;
  output = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly #exited: Promise<void>;

  private constructor(child: ChildProcess, port: number) {
    this.child = child;
    this.base = `http://127.0.0.1:${port}`;
    child.stdout!.on('data', (chunk) => (this.output = (this.output + chunk).slice(-20_000)));
    child.stderr!.on('data', (chunk) => (this.output = (this.output + chunk).slice(-20_000)));
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      }),
    );
  }

  /** `REDIS_URL` and other settings pass through; the run's own Redis is never the service's by accident. */
  static async start(env: { DATABASE_URL?: string; DATA_DIR: string; REDIS_URL?: string } & Record<string, string | undefined>): Promise<ServiceProcess> {
    const port = await freePort();
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      JWT_SECRET: TEST_JWT_SECRET,
      BCRYPT_COST: '4',
      RATE_LIMIT_PER_MINUTE: '1000000',
      LOGIN_RATE_LIMIT: '1000000',
    };
    if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
    if (!env.REDIS_URL) delete childEnv.REDIS_URL;
    const child = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const service = new ServiceProcess(child, port);
    await waitFor('the service to answer /api/health', async () => {
      if (service.exit) throw new Error(`the service exited (${JSON.stringify(service.exit)}):\n${service.output}`);
      return (await call(service.base, 'GET', '/api/health').catch(() => undefined))?.status === 200;
    }, 60_000);
    return service;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.exit) return;
    this.child.kill(signal);
    await this.#exited;
  }
}

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text for the failure message
  }
  return { status: res.status, body, headers: res.headers };
}

async function expect2xx(what: string, answer: Promise<Answer>): Promise<any> {
  const res = await answer;
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export interface LoadTenant {
  tenantId: string;
  ownerId: string;
  token: string;
  refreshToken: string;
  conversationIds: string[];
}

/** A tenant registered through the API, with conversations (each with a contact) to write into. */
export async function setUpTenant(base: string, conversations: number): Promise<LoadTenant> {
  const registered = await expect2xx(
    'register',
    call(base, 'POST', '/api/v1/auth/register', {
      body: { email: `fault-${randomUUID()}@example.test`, password: 'correct horse battery staple', name: 'Owner', tenant_name: 'Faults' },
    }),
  );
  const token: string = registered.access_token;
  const conversationIds: string[] = [];
  for (let i = 0; i < conversations; i++) {
    const contact = await expect2xx('contact', call(base, 'POST', '/api/v1/contacts', { token, body: { name: `Contact ${i}` } }));
    const conversation = await expect2xx('conversation', call(base, 'POST', '/api/v1/conversations', { token, body: { contact_id: contact.id } }));
    conversationIds.push(conversation.id);
  }
  return { tenantId: registered.tenant.id, ownerId: registered.user.id, token, refreshToken: registered.refresh_token, conversationIds };
}

/** One POST /v1/messages as the load sends it: the content names the Idempotency-Key. */
export interface SentMessage {
  key: string;
  conversationId: string;
  status: number | 'no answer';
  messageId?: string;
  retryAfter?: string | null;
  code?: string;
  /** Idempotent-Replayed: the key had committed already. */
  replayed?: boolean;
}

export const sendMessage = async (base: string, tenant: LoadTenant, conversationId: string, key: string): Promise<SentMessage> => {
  try {
    const res = await call(base, 'POST', '/api/v1/messages', {
      token: tenant.token,
      headers: { 'Idempotency-Key': key },
      body: { conversation_id: conversationId, content: `load ${key}` },
    });
    return { key, conversationId, status: res.status, messageId: res.body?.id, retryAfter: res.headers.get('retry-after'), code: res.body?.code, replayed: res.headers.get('idempotent-replayed') === 'true' };
  } catch {
    return { key, conversationId, status: 'no answer' };
  }
};

export interface MessageAudit {
  /** Answered 2xx, not in the database. */
  lost: number;
  /** More than one message for one Idempotency-Key. */
  doubled: number;
  /** Stored messages without exactly one message.created event. */
  eventsWrong: number;
  stored: number;
}

/** What the database holds for the load's messages, against what was answered 2xx. */
export async function auditMessages(database: Database, tenantId: string, sent: SentMessage[]): Promise<MessageAudit> {
  const rows = await database.asSystem((trx) =>
    sql<{ id: string; content: string; events: number }>`
      select m.id, m.content,
        (select count(*) from events e
          where e.tenant_id = m.tenant_id and e.type = 'message.created' and e.data->'message'->>'id' = m.id)::int as events
      from messages m
      where m.tenant_id = ${tenantId} and m.content like 'load %'`.execute(trx),
  );
  const ids = new Set(rows.rows.map((r) => r.id));
  const perKey = new Map<string, number>();
  for (const r of rows.rows) perKey.set(r.content, (perKey.get(r.content) ?? 0) + 1);
  const answered = sent.filter((s) => typeof s.status === 'number' && s.status >= 200 && s.status < 300);
  return {
    lost: answered.filter((s) => !s.messageId || !ids.has(s.messageId)).length,
    doubled: [...perKey.values()].filter((n) => n > 1).length,
    eventsWrong: rows.rows.filter((r) => Number(r.events) !== 1).length,
    stored: rows.rows.length,
  };
}

export interface ConversationAudit {
  /** A conversation whose row, notices, surveys and events disagree: a transaction half applied. */
  halfChanged: string[];
  closes: Map<string, number>;
  reopens: Map<string, number>;
  transfers: Map<string, number>;
}

/**
 * Every close leaves a closed notice, a survey prompt, a survey and conversation.closed; every reopen its
 * notice and event; every transfer its notice and event; and the row agrees with the last of them.
 */
export async function auditConversations(database: Database, tenantId: string, conversationIds: string[]): Promise<ConversationAudit> {
  const halfChanged: string[] = [];
  const closes = new Map<string, number>();
  const reopens = new Map<string, number>();
  const transfers = new Map<string, number>();
  await database.asSystem(async (trx) => {
    for (const id of conversationIds) {
      const conversation = await trx.selectFrom('conversations').selectAll().where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
      const count = async (table: 'messages' | 'events' | 'surveys', where: ReturnType<typeof sql>) =>
        Number((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where conversation_id = ${id} and ${where}`.execute(trx)).rows[0]!.n);
      const notices = async (content: string) => count('messages', sql`type = 'system' and content = ${content}`);
      const events = async (type: string) => count('events', sql`type = ${type}`);
      const closed = [await notices(VISITOR_NOTICES.closed), await count('messages', sql`type = 'survey'`), await count('surveys', sql`true`), await events('conversation.closed')];
      const reopened = [await notices(VISITOR_NOTICES.reopened), await events('conversation.reopened')];
      const transferred = [await notices(VISITOR_NOTICES.transferred), await events('conversation.transferred')];
      const consistent =
        new Set(closed).size === 1 &&
        new Set(reopened).size === 1 &&
        new Set(transferred).size === 1 &&
        // Closes and reopens alternate from an open conversation.
        (closed[0] === reopened[0] || closed[0] === reopened[0]! + 1) &&
        (conversation.status === 'closed') === (closed[0] === reopened[0]! + 1) &&
        (conversation.status === 'closed') === (conversation.closed_at !== null) &&
        (conversation.status !== 'assigned' || conversation.assigned_user_id !== null) &&
        (conversation.status !== 'open' || conversation.assigned_user_id === null);
      if (!consistent) halfChanged.push(`${id}: status ${conversation.status}, closes ${closed}, reopens ${reopened}, transfers ${transferred}`);
      closes.set(id, closed[0]!);
      reopens.set(id, reopened[0]!);
      transfers.set(id, transferred[0]!);
    }
  });
  return { halfChanged, closes, reopens, transfers };
}
