// Capacity: how many simultaneous people one instance serves, counted the way Mattermost counts its users
// per 2 vCPU: a load model of a support day (docs/benchmarks.md, "The capacity model") ramped step by step
// until the first of: more than 0.025% of requests failing, the p99 of any request class over 500 ms, the p99
// of a message's delivery to its sockets over 500 ms. The last step that passed is the capacity: people,
// messages a second, the service's CPU and memory there, and where the time went (the service's event loop,
// PostgreSQL's backends, this load generator, the rest of the machine).
//
// Rate limits stay at their defaults. Visitors come from distinct addresses, as they do on the internet:
// the service trusts X-Forwarded-For from loopback (TRUST_PROXY=loopback, its default, as behind the
// reverse proxy of docker-compose.yml), and each visitor and agent sends an address of its own in it, so
// the per-address budgets (widget sessions) and the per-visitor and per-user ones count as in production.
// The HTTP requests share a pool of keep-alive connections, as a proxy's upstream connections do.
// BCRYPT_COST=4 makes the setup's registrations and logins cheap; the model itself logs nobody in.
//
//   DATABASE_URL=postgres://... REDIS_URL=redis://... npm run bench:capacity   # PostgreSQL + Redis
//   npm run bench:capacity                                                    # the embedded default (PGlite)
//   npm run bench:capacity -- --soak     # the model at half the capacity on record, 60 minutes
//   BENCH_STEPS=250,500,1000 BENCH_STEP_SECONDS=60 BENCH_RAMP_SECONDS=20 BENCH_MAX_MINUTES=12
//   BENCH_SOAK_MINUTES=3 BENCH_SOAK_PEOPLE=1000 ...
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { WebSocket } from 'ws';
import { LIMITS, MODEL } from './capacity-model.ts';
import { resultsDir, runsOf, writeResults, type Figures } from './results.ts';
import { databaseCpuSeconds, startProcess } from './support.ts';

const onPostgres = Boolean(process.env.DATABASE_URL?.startsWith('postgres'));
const databaseName = onPostgres ? `PostgreSQL${process.env.REDIS_URL ? ' + Redis' : ''}` : 'PGlite (embedded)';
const soakMinutes = Number(process.env.BENCH_SOAK_MINUTES ?? (process.argv.includes('--soak') ? 60 : 0));
// A small first step warms the service up (its validators compile at first use): a first step of 250 on a
// cold embedded database failed on that alone.
const steps = (process.env.BENCH_STEPS ?? (onPostgres ? '100,250,500,1000,1500,2000,2500,3000,4000,5000' : '50,100,250,375,500,750,1000,1500')).split(',').map(Number);
const stepSeconds = Number(process.env.BENCH_STEP_SECONDS ?? 60);
const rampSeconds = Number(process.env.BENCH_RAMP_SECONDS ?? 20);
const maxMinutes = Number(process.env.BENCH_MAX_MINUTES ?? 12);

const SITE = 'https://bench.example';
const PASSWORD = 'benchmark password';
const METRICS_TOKEN = 'capacity-bench-metrics-token';

const uniform = ([a, b]: number[]) => a! + Math.random() * (b! - a!);
const between = ([a, b]: number[]) => Math.floor(a! + Math.random() * (b! - a! + 1));
const chance = (p: number) => Math.random() < p;
const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
let stopped = false;
/** A timer of the model: one per person and pending action, none once the run stops. */
const later = (seconds: number, fn: () => void | Promise<void>) => {
  if (stopped) return undefined;
  return setTimeout(() => void fn(), seconds * 1000);
};

// A loopback receiver for the tenants' webhooks and their workflows' webhook actions: answers 204 and counts.
let hooksReceived = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    hooksReceived++;
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

const dataDir = mkdtempSync(join(tmpdir(), 'chat-bench-capacity-'));
const service = await startProcess('src/server.ts', {
  DATA_DIR: dataDir,
  BCRYPT_COST: '4',
  TRUST_PROXY: 'loopback',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  METRICS_TOKEN,
});
const base = service.url;
const pool = new Pool(base, { connections: 128, keepAliveTimeout: 2000, keepAliveMaxTimeout: 2000 });

/**
 * PostgreSQL in production vacuums by itself; the development cluster here may run without autovacuum,
 * and then the dead versions the model leaves of each conversation and visitor row pile up for the whole
 * run, and every read of them steps over more. Where autovacuum is off, this does what it would: each
 * minute, every table with more dead rows than its default threshold (50 and 20% of the live rows) is
 * vacuumed and analyzed. Its CPU is PostgreSQL's, counted with it.
 */
async function autovacuumStandIn(): Promise<() => Promise<void>> {
  if (!onPostgres) return async () => undefined;
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  const { rows } = await client.query<{ on: string }>("select current_setting('autovacuum') as on");
  if (rows[0]?.on === 'on') {
    await client.end();
    return async () => undefined;
  }
  console.log("PostgreSQL runs without autovacuum here: this script applies autovacuum's default thresholds each minute");
  let pass: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    pass = pass.then(async () => {
      const due = await client.query<{ name: string }>(
        "select quote_ident(schemaname) || '.' || quote_ident(relname) as name from pg_stat_user_tables where n_dead_tup > 50 + 0.2 * n_live_tup",
      );
      for (const { name } of due.rows) await client.query(`vacuum (analyze) ${name}`);
    }).catch((err: unknown) => console.error('autovacuum stand-in:', err));
  }, 60_000);
  return async () => {
    clearInterval(timer);
    await pass;
    await client.end();
  };
}
const stopVacuuming = await autovacuumStandIn();

// ---- What is measured: requests by class, deliveries, failures; reset at the start of each window.
class Window {
  readonly started = performance.now();
  readonly latencies = new Map<string, number[]>();
  readonly failed = new Map<string, number>();
  readonly delivery: number[] = [];
  undelivered = 0;
  messages = 0;
  readonly errors: string[] = [];
  record(cls: string, ms: number, ok: boolean, detail?: string) {
    let list = this.latencies.get(cls);
    if (!list) this.latencies.set(cls, (list = []));
    list.push(ms);
    if (!ok) {
      this.failed.set(cls, (this.failed.get(cls) ?? 0) + 1);
      if (this.errors.length < 10) this.errors.push(`${cls}: ${detail}`);
    }
  }
}
let win = new Window();

interface CallOptions {
  token?: string;
  body?: unknown;
  ip?: string;
  widget?: boolean;
  /** Parse the answer's JSON (else it is read and dropped). */
  json?: boolean;
}

/** One request of the model, timed under its class; undefined when it failed (any answer but 2xx). */
async function call(cls: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, o: CallOptions = {}): Promise<any> {
  const t0 = performance.now();
  const headers: Record<string, string> = {};
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.ip) headers['x-forwarded-for'] = o.ip;
  if (o.widget) headers.origin = SITE;
  try {
    const res = await pool.request({ method, path, headers, body: o.body === undefined ? null : JSON.stringify(o.body) });
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const out = ok && o.json ? await res.body.json() : ok ? await res.body.dump() : await res.body.text();
    win.record(cls, performance.now() - t0, ok, ok ? undefined : `${res.statusCode} ${String(out).slice(0, 160)}`);
    return ok ? (out ?? true) : undefined;
  } catch (err) {
    win.record(cls, performance.now() - t0, false, (err as Error).message);
    return undefined;
  }
}

/** A setup request: not measured, and a failure ends the run. */
async function setup(method: 'POST' | 'PUT' | 'PATCH', path: string, o: CallOptions = {}): Promise<any> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.ip) headers['x-forwarded-for'] = o.ip;
  const res = await pool.request({ method, path, headers, body: JSON.stringify(o.body ?? {}) });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`setup ${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

let addresses = 0;
/** An address of its own for each visitor and agent (documentation and private ranges: never dialled, only named). */
const nextAddress = () => {
  const n = ++addresses;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};

// ---- Deliveries: every message the model sends carries a marker; each socket that should have it counts it.
interface Pending {
  start: number;
  expected: number;
  got: number;
}
const pending = new Map<number, Pending>();
let markers = 0;
function expectDelivery(expected: number): number {
  const n = ++markers;
  pending.set(n, { start: performance.now(), expected, got: 0 });
  return n;
}
function onFrame(text: string) {
  if (!text.includes('"type":"message.created"')) return;
  const at = text.indexOf('"content":"cap');
  if (at < 0) return;
  const n = Number.parseInt(text.slice(at + 14, text.indexOf(' ', at + 14)), 10);
  const p = pending.get(n);
  if (!p || ++p.got < p.expected) return;
  win.delivery.push(performance.now() - p.start);
  pending.delete(n);
}
const sweeper = setInterval(() => {
  const now = performance.now();
  for (const [n, p] of pending) {
    if (now - p.start < 10_000) continue;
    win.undelivered++;
    if (win.errors.length < 10) win.errors.push(`delivery: message ${n} reached ${p.got} of ${p.expected} sockets in 10 s`);
    pending.delete(n);
  }
}, 1000);

/** A socket of the model, timed until its welcome; undefined when it failed. */
function openSocket(cls: string, url: string, headers: Record<string, string>, onClose: () => void): Promise<WebSocket | undefined> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    let welcomed = false;
    ws.on('message', (raw) => {
      const text = raw.toString();
      if (!welcomed) {
        welcomed = true;
        win.record(cls, performance.now() - t0, true);
        return resolve(ws);
      }
      onFrame(text);
      (ws as WebSocket & { onText?: (t: string) => void }).onText?.(text);
    });
    ws.once('error', (err) => {
      if (welcomed) return;
      welcomed = true;
      win.record(cls, performance.now() - t0, false, err.message);
      resolve(undefined);
    });
    ws.once('close', (code) => {
      if (!welcomed) {
        welcomed = true;
        win.record(cls, performance.now() - t0, false, `closed ${code} before its welcome`);
        resolve(undefined);
      } else onClose();
    });
  });
}

// ---- The people.
interface Chat {
  id: string;
  visitor: Visitor;
  agent?: Agent;
  unanswered: number;
  answers: number;
  visitorDone: boolean;
  closed: boolean;
  transferred: boolean;
  answerTimer?: NodeJS.Timeout;
}

interface Tenant {
  id: string;
  ownerToken: string;
  shop: string;
  help: string;
  agents: Agent[];
  visitors: Visitor[];
  chats: Map<string, Chat>;
  /** Assignments heard before the visitor's start was answered. */
  early: Map<string, Agent>;
}

const onlineAgents = (t: Tenant) => t.agents.reduce((n, a) => n + (a.online ? 1 : 0), 0);

class Agent {
  id = '';
  token = '';
  refreshToken = '';
  online = false;
  readonly ip = nextAddress();
  ws?: WebSocket;
  readonly tenant: Tenant;
  readonly email: string;
  constructor(tenant: Tenant, email: string) {
    this.tenant = tenant;
    this.email = email;
  }

  async connect(): Promise<void> {
    const ticket = await call('agent_ticket', 'POST', '/api/v1/ws/tickets', { token: this.token, ip: this.ip, json: true });
    if (!ticket) return void later(5, () => this.connect());
    const ws = await openSocket('agent_socket', `${base.replace('http', 'ws')}/api/v1/ws?ticket=${encodeURIComponent(ticket.ticket)}`, { 'x-forwarded-for': this.ip }, () => {
      this.online = false;
      if (!stopped) {
        win.record('agent_socket_dropped', 0, false, 'an agent socket closed');
        later(1, () => this.connect());
      }
    });
    if (!ws) return void later(5, () => this.connect());
    this.ws = ws;
    this.online = true;
    (ws as WebSocket & { onText?: (t: string) => void }).onText = (text) => this.hear(text);
  }

  /** The app's inbox: its open conversations, now and then. */
  listLoop() {
    later(uniform(MODEL.listS), async () => {
      await call('agent_list', 'GET', '/api/v1/conversations?assigned_to=me&status=assigned&limit=25', { token: this.token, ip: this.ip });
      this.listLoop();
    });
  }

  /** Access tokens live 15 minutes: refreshed every ten, as the app does. */
  refreshLoop() {
    later(600, async () => {
      const pair = await call('agent_refresh', 'POST', '/api/v1/auth/refresh', { body: { refresh_token: this.refreshToken }, ip: this.ip, json: true });
      if (pair) {
        this.token = pair.access_token;
        this.refreshToken = pair.refresh_token;
      }
      this.refreshLoop();
    });
  }

  hear(text: string) {
    if (!text.includes('"type":"conversation.assigned"') || !text.includes(this.id)) return;
    const data = JSON.parse(text).data as { conversation_id: string; assigned_user_id: string | null };
    if (data.assigned_user_id !== this.id) return;
    const chat = this.tenant.chats.get(data.conversation_id);
    if (chat) this.take(chat);
    else {
      // Kept until the visitor's start is answered; one for a conversation already gone is never taken.
      if (this.tenant.early.size > 1000) this.tenant.early.clear();
      this.tenant.early.set(data.conversation_id, this);
    }
  }

  /** A conversation is the agent's: opened (the conversation and its messages), answered if the visitor waits. */
  async take(chat: Chat) {
    if (chat.agent === this || chat.closed) return;
    chat.agent = this;
    await Promise.all([
      call('agent_open', 'GET', `/api/v1/conversations/${chat.id}`, { token: this.token, ip: this.ip }),
      call('agent_messages', 'GET', `/api/v1/messages/${chat.id}?limit=50`, { token: this.token, ip: this.ip }),
    ]);
    if (chat.unanswered > 0) this.willAnswer(chat);
  }

  willAnswer(chat: Chat) {
    if (chat.answerTimer || chat.closed) return;
    chat.answerTimer = later(uniform(MODEL.answerS), () => this.answer(chat));
  }

  async answer(chat: Chat) {
    chat.answerTimer = undefined;
    if (chat.agent !== this || chat.closed) return;
    chat.unanswered = 0;
    const marker = expectDelivery(onlineAgents(this.tenant) + (chat.visitor.ws ? 1 : 0));
    const sent = await call('agent_message', 'POST', '/api/v1/messages', { token: this.token, ip: this.ip, body: { conversation_id: chat.id, content: `cap${marker} Thanks, let me check that for you.` } });
    if (!sent) return void pending.delete(marker);
    win.messages++;
    chat.answers++;
    if (chat.agent !== this) return;
    if (chat.unanswered > 0) return this.willAnswer(chat);
    if (chat.answers === 1 && !chat.transferred && chance(MODEL.transferShare)) return void later(uniform([2, 5]), () => this.transfer(chat));
    if (chat.visitorDone) later(uniform(MODEL.closeS), () => this.close(chat));
  }

  async transfer(chat: Chat) {
    const others = this.tenant.agents.filter((a) => a !== this && a.online);
    if (chat.agent !== this || chat.closed || others.length === 0) return;
    const to = others[Math.floor(Math.random() * others.length)]!;
    chat.transferred = true;
    clearTimeout(chat.answerTimer);
    chat.answerTimer = undefined;
    const done = await call('agent_transfer', 'POST', `/api/v1/conversations/${chat.id}/transfer`, { token: this.token, ip: this.ip, body: { user_id: to.id, note: 'Billing knows this one.' } });
    if (!done) return;
    await to.take(chat);
    if (chat.visitorDone && chat.unanswered === 0) later(uniform(MODEL.closeS), () => to.close(chat));
  }

  async close(chat: Chat) {
    if (chat.agent !== this || chat.closed) return;
    chat.closed = true;
    clearTimeout(chat.answerTimer);
    await call('agent_close', 'POST', `/api/v1/conversations/${chat.id}/close`, { token: this.token, ip: this.ip });
    later(uniform(MODEL.leaveS), () => chat.visitor.leave());
  }
}

class Visitor {
  ip = '';
  token = '';
  ws?: WebSocket;
  chat?: Chat;
  viaBot = false;
  left = false;
  messagesLeft = 0;
  pagesLeft = 0;
  stuckTimer?: NodeJS.Timeout;
  readonly tenant: Tenant;
  constructor(tenant: Tenant) {
    this.tenant = tenant;
  }

  /** Opens the bubble: a session (from an address of its own), the socket, the page it is on. */
  async arrive(chatting: boolean) {
    if (this.left) return;
    this.ip = nextAddress();
    this.viaBot = chance(MODEL.botShare);
    const session = await call('widget_session', 'POST', '/api/v1/widget/sessions', {
      ip: this.ip,
      widget: true,
      json: true,
      body: { widget_id: this.viaBot ? this.tenant.help : this.tenant.shop, page_url: `${SITE}/`, page_title: 'Home' },
    });
    if (!session) return void later(uniform(MODEL.returnS), () => this.arrive(false));
    this.token = session.visitor_token;
    this.ws = await openSocket('visitor_socket', `${base.replace('http', 'ws')}/api/v1/ws?visitor_token=${encodeURIComponent(this.token)}`, { origin: SITE, 'x-forwarded-for': this.ip }, () => (this.ws = undefined));
    await this.view();
    if (chatting) {
      this.messagesLeft = between([1, MODEL.messages[1]!]);
      later(uniform([0, rampSeconds]), () => this.start());
    } else {
      this.messagesLeft = between(MODEL.messages);
      this.pagesLeft = between(MODEL.pages);
      later(uniform(MODEL.pageGapS), () => this.browse());
    }
  }

  view() {
    const page = between([1, 500]);
    return call('page_view', 'POST', '/api/v1/widget/page-views', { token: this.token, ip: this.ip, widget: true, body: { url: `${SITE}/products/${page}`, title: `Product ${page}` } });
  }

  async browse() {
    if (this.left) return;
    await this.view();
    if (--this.pagesLeft > 0) later(uniform(MODEL.pageGapS), () => this.browse());
    else later(uniform(MODEL.pageGapS), () => this.start());
  }

  askedForPerson = false;

  text(first: boolean): string {
    if (this.viaBot && first) return 'What are your shipping times?';
    if (this.viaBot && !this.askedForPerson) {
      this.askedForPerson = true;
      return 'I would like to talk to a person, please.';
    }
    return chance(MODEL.refundShare) ? 'I want a refund for my last order.' : 'Is the blue one in stock in size M?';
  }

  expected() {
    // A conversation the bot holds reaches the agents too (every member socket hears the tenant).
    return onlineAgents(this.tenant) + (this.ws ? 1 : 0);
  }

  async start() {
    if (this.left) return;
    const marker = expectDelivery(this.expected());
    const conversation = await call('widget_start', 'POST', '/api/v1/widget/conversations', { token: this.token, ip: this.ip, widget: true, json: true, body: { content: `cap${marker} ${this.text(true)}` } });
    if (!conversation) {
      pending.delete(marker);
      return this.leave();
    }
    win.messages++;
    // The bot answers the first message; the second asks for a person.
    if (this.viaBot) this.messagesLeft = Math.max(2, this.messagesLeft);
    const chat: Chat = { id: conversation.id, visitor: this, unanswered: this.viaBot ? 0 : 1, answers: 0, visitorDone: false, closed: false, transferred: false };
    this.chat = chat;
    this.tenant.chats.set(chat.id, chat);
    const early = this.tenant.early.get(chat.id);
    if (early) {
      this.tenant.early.delete(chat.id);
      void early.take(chat);
    }
    this.next();
  }

  next() {
    if (--this.messagesLeft > 0) {
      later(uniform(MODEL.writeGapS), () => this.write());
      return;
    }
    this.chat!.visitorDone = true;
    if (this.chat!.agent && this.chat!.unanswered === 0 && !this.chat!.answerTimer) later(uniform(MODEL.closeS), () => this.chat!.agent!.close(this.chat!));
    // A conversation nobody closes (an agent who never got it) does not keep its place forever.
    this.stuckTimer = later(180, () => {
      if (this.chat && !this.chat.closed) win.record('left_unclosed', 0, false, `conversation ${this.chat.id} not closed 180 s after the visitor's last message`);
      this.leave();
    });
  }

  async write() {
    const chat = this.chat!;
    if (this.left || chat.closed) return;
    const marker = expectDelivery(this.expected());
    const sent = await call('widget_message', 'POST', `/api/v1/widget/conversations/${chat.id}/messages`, { token: this.token, ip: this.ip, widget: true, body: { content: `cap${marker} ${this.text(false)}` } });
    if (!sent) pending.delete(marker);
    else {
      win.messages++;
      chat.unanswered++;
      chat.agent?.willAnswer(chat);
    }
    this.next();
  }

  /** Closes the bubble; a new visitor takes the place shortly after. */
  leave() {
    if (this.left) return;
    clearTimeout(this.stuckTimer);
    this.ws?.close();
    this.ws = undefined;
    if (this.chat) this.tenant.chats.delete(this.chat.id);
    this.left = true;
    const index = this.tenant.visitors.indexOf(this);
    later(uniform(MODEL.returnS), () => {
      const next = new Visitor(this.tenant);
      this.tenant.visitors[index] = next;
      return next.arrive(false);
    });
  }
}

// ---- Tenants, created as the steps need them.
const tenants: Tenant[] = [];
const stamp = Date.now();

async function pooled<T>(items: T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => { while (next < items.length) await work(items[next++]!); }));
}

async function newTenant(): Promise<Tenant> {
  const label = `${stamp}-${tenants.length}`;
  const ip = nextAddress();
  const owner = await setup('POST', '/api/v1/auth/register', { ip, body: { email: `capacity-${label}@example.test`, password: PASSWORD, name: 'Owner', tenant_name: `Capacity ${label}` } });
  const token = owner.access_token as string;
  const o = { token, ip };
  await setup('PUT', '/api/v1/routing', { ...o, body: { routing: 'least_loaded' } });
  await setup('PUT', `/api/v1/routing/capacities/${owner.user.id}`, { ...o, body: { capacity: 0 } });
  const shop = await setup('POST', '/api/v1/widgets', { ...o, body: { name: 'Shop' } });
  const help = await setup('POST', '/api/v1/widgets', { ...o, body: { name: 'Help' } });
  for (const w of [shop, help]) await setup('POST', '/api/v1/domains', { ...o, body: { widget_id: w.id, domain: 'bench.example' } });
  await setup('POST', '/api/v1/canned-responses', { ...o, body: { shortcut: 'shipping', title: 'Shipping times', content: 'We ship within two working days.' } });
  const bot = await setup('POST', '/api/v1/bots', { ...o, body: { name: 'Helper', kind: 'faq' } });
  await setup('PATCH', `/api/v1/widgets/${help.id}`, { ...o, body: { settings: { bot_id: bot.id } } });
  await setup('POST', '/api/v1/webhooks', { ...o, body: { url: `${receiverUrl}/hook`, events: ['conversation.created', 'message.created', 'conversation.closed'] } });
  await setup('POST', '/api/v1/workflows', {
    ...o,
    body: { name: 'Refunds are urgent', trigger: { type: 'message.created' }, conditions: [{ field: 'message.content', operator: 'contains', value: 'refund' }], actions: [{ type: 'set_priority', priority: 'urgent' }] },
  });
  await setup('POST', '/api/v1/workflows', { ...o, body: { name: 'Closed to the CRM', trigger: { type: 'conversation.closed' }, actions: [{ type: 'webhook', url: `${receiverUrl}/crm` }] } });
  const tenant: Tenant = { id: owner.tenant.id, ownerToken: token, shop: shop.id, help: help.id, agents: [], visitors: [], chats: new Map(), early: new Map() };
  tenant.agents = Array.from({ length: MODEL.agentsPerTenant }, (_, i) => new Agent(tenant, `capacity-agent-${i}-${label}@example.test`));
  await pooled(tenant.agents, 5, async (a) => {
    // An account of its own first: adding an existing account makes it an active member at once (no invitation mail).
    a.id = (await setup('POST', '/api/v1/auth/register', { ip: a.ip, body: { email: a.email, password: PASSWORD, name: 'Agent' } })).user.id;
    await setup('POST', `/api/v1/tenants/${tenant.id}/members`, { ...o, body: { email: a.email, role: 'agent' } });
    const login = await setup('POST', '/api/v1/auth/login', { ip: a.ip, body: { email: a.email, password: PASSWORD, tenant_id: tenant.id } });
    a.token = login.access_token;
    a.refreshToken = login.refresh_token;
    await a.connect();
    if (!a.online) throw new Error('an agent socket did not open');
    a.listLoop();
    a.refreshLoop();
  });
  tenants.push(tenant);
  return tenant;
}

/** Brings the model to `people`: tenants of 250 (the last one smaller), their new visitors' places started over the ramp. */
async function grow(people: number) {
  const tenantCount = Math.ceil(people / MODEL.tenantPeople);
  while (tenants.length < tenantCount) await newTenant();
  let visitorsLeft = people - tenantCount * MODEL.agentsPerTenant;
  for (const t of tenants.slice(0, tenantCount)) {
    const want = Math.min(MODEL.tenantPeople - MODEL.agentsPerTenant, visitorsLeft);
    visitorsLeft -= want;
    while (t.visitors.length < want) {
      const v = new Visitor(t);
      t.visitors.push(v);
      later(Math.random() * rampSeconds, () => v.arrive(chance(MODEL.chattingAtStart)));
    }
  }
}

// ---- Where the time goes.
const CLOCK_TICKS = 100;
function machineCpuSeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  return (fields.reduce((a, b) => a + b, 0) - fields[3]! - fields[4]!) / CLOCK_TICKS;
}
const ownCpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const mainThreadSeconds = () => {
  const t = service.threadCpu().get('node-MainThread');
  return t ? t.user + t.system : 0;
};
async function scrapeLoopDelay(): Promise<{ p99: number; max: number }> {
  const res = await pool.request({ method: 'GET', path: '/api/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.body.text();
  const read = (name: string) => Number(new RegExp(`^${name} ([0-9.eE+-]+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

interface Reading {
  people: number;
  seconds: number;
  requests: number;
  failed: number;
  failedShare: number;
  /** p99 by request class, ms. */
  p99: Record<string, number>;
  worstClass: string;
  deliveryP99: number;
  deliveryP50: number;
  deliveries: number;
  undelivered: number;
  messagesPerSecond: number;
  requestsPerSecond: number;
  /** Shares of one core. */
  serviceCpu: number;
  eventLoopCpu: number;
  databaseCpu: number;
  generatorCpu: number;
  otherCpu: number;
  loopDelayP99: number;
  loopDelayMax: number;
  rssMiB: number;
  generatorRssMiB: number;
  webhooksPerSecond: number;
  errors: string[];
  passed: boolean;
  failure?: string;
}

/** Failures that are no request: counted as failed, not as requests, and without a latency. */
const MISHAPS = new Set(['agent_socket_dropped', 'left_unclosed']);

/** Measures the model as it runs for `seconds`. */
async function measure(people: number, seconds: number): Promise<Reading> {
  await scrapeLoopDelay();
  const before = { service: service.cpuSeconds(), main: mainThreadSeconds(), database: databaseCpuSeconds(), own: ownCpuSeconds(), machine: machineCpuSeconds(), hooks: hooksReceived };
  win = new Window();
  // RSS is read every 5 s and its median kept: one reading lands anywhere on the garbage collector's sawtooth.
  const rss: number[] = [];
  const sampler = setInterval(() => rss.push(service.rssKiB() / 1024), 5000);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(sampler);
  const w = win;
  const wall = (performance.now() - w.started) / 1000;
  const loop = await scrapeLoopDelay();
  const used = { service: service.cpuSeconds() - before.service, main: mainThreadSeconds() - before.main, database: databaseCpuSeconds() - before.database, own: ownCpuSeconds() - before.own, machine: machineCpuSeconds() - before.machine };
  const p99: Record<string, number> = {};
  let requests = 0;
  let failed = w.undelivered;
  for (const [cls, list] of w.latencies) {
    if (!MISHAPS.has(cls)) requests += list.length;
    failed += w.failed.get(cls) ?? 0;
    if (list.length > 0 && !MISHAPS.has(cls)) p99[cls] = Number(percentile(list, 99).toFixed(1));
  }
  const worstClass = Object.entries(p99).sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
  const failedShare = failed / Math.max(1, requests + w.delivery.length + w.undelivered);
  const deliveryP99 = percentile(w.delivery, 99);
  const reading: Reading = {
    people,
    seconds: wall,
    requests,
    failed,
    failedShare,
    p99,
    worstClass,
    deliveryP99,
    deliveryP50: percentile(w.delivery, 50),
    deliveries: w.delivery.length,
    undelivered: w.undelivered,
    messagesPerSecond: w.messages / wall,
    requestsPerSecond: requests / wall,
    serviceCpu: used.service / wall,
    eventLoopCpu: used.main / wall,
    databaseCpu: used.database / wall,
    generatorCpu: used.own / wall,
    otherCpu: Math.max(0, used.machine - used.service - used.database - used.own) / wall,
    loopDelayP99: loop.p99,
    loopDelayMax: loop.max,
    rssMiB: rss.length > 0 ? percentile(rss, 50) : service.rssKiB() / 1024,
    generatorRssMiB: process.memoryUsage().rss / 1048576,
    webhooksPerSecond: (hooksReceived - before.hooks) / wall,
    errors: w.errors,
    passed: true,
  };
  if (failedShare > LIMITS.failedShare) reading.failure = `${(failedShare * 100).toFixed(3)}% of requests failed (over ${LIMITS.failedShare * 100}%)`;
  else if ((p99[worstClass] ?? 0) > LIMITS.p99Ms) reading.failure = `p99 of ${worstClass} ${p99[worstClass]} ms (over ${LIMITS.p99Ms} ms)`;
  else if (deliveryP99 > LIMITS.deliveryP99Ms) reading.failure = `delivery p99 ${deliveryP99.toFixed(0)} ms (over ${LIMITS.deliveryP99Ms} ms)`;
  reading.passed = !reading.failure;
  return reading;
}

const pct = (share: number) => `${(share * 100).toFixed(0)}%`;
const HEADER = 'people   msg/s  req/s  failed   worst p99 (class)            delivery p50/p99   service CPU (loop)  loop delay p99  PostgreSQL  generator  other   RSS MiB';
function line(r: Reading): string {
  return [
    String(r.people).padStart(6),
    r.messagesPerSecond.toFixed(1).padStart(7),
    r.requestsPerSecond.toFixed(0).padStart(6),
    `${(r.failedShare * 100).toFixed(3)}%`.padStart(7),
    `${(r.p99[r.worstClass] ?? 0).toFixed(0)} ms (${r.worstClass})`.padEnd(28),
    `${r.deliveryP50.toFixed(0)}/${r.deliveryP99.toFixed(0)} ms`.padStart(17),
    `${pct(r.serviceCpu)} (${pct(r.eventLoopCpu)})`.padStart(19),
    `${r.loopDelayP99.toFixed(0)} ms`.padStart(15),
    pct(r.databaseCpu).padStart(11),
    pct(r.generatorCpu).padStart(10),
    pct(r.otherCpu).padStart(6),
    r.rssMiB.toFixed(0).padStart(9),
    r.passed ? '' : `  FAILS: ${r.failure}`,
  ].join(' ');
}

const figuresOf = (prefix: string, r: Reading): Figures => ({
  [`${prefix}.people`]: r.people,
  [`${prefix}.messages_s`]: Number(r.messagesPerSecond.toFixed(1)),
  [`${prefix}.requests_s`]: Math.round(r.requestsPerSecond),
  [`${prefix}.failed_share`]: Number(r.failedShare.toFixed(6)),
  [`${prefix}.worst_p99_ms`]: r.p99[r.worstClass] ?? 0,
  [`${prefix}.delivery_p50_ms`]: Number(r.deliveryP50.toFixed(1)),
  [`${prefix}.delivery_p99_ms`]: Number(r.deliveryP99.toFixed(1)),
  [`${prefix}.service_cpu_share`]: Number(r.serviceCpu.toFixed(3)),
  [`${prefix}.event_loop_cpu_share`]: Number(r.eventLoopCpu.toFixed(3)),
  [`${prefix}.event_loop_delay_p99_ms`]: Number(r.loopDelayP99.toFixed(1)),
  [`${prefix}.database_cpu_share`]: Number(r.databaseCpu.toFixed(3)),
  [`${prefix}.generator_cpu_share`]: Number(r.generatorCpu.toFixed(3)),
  [`${prefix}.other_cpu_share`]: Number(r.otherCpu.toFixed(3)),
  [`${prefix}.rss_mib`]: Math.round(r.rssMiB),
  [`${prefix}.webhooks_s`]: Number(r.webhooksPerSecond.toFixed(1)),
});

async function ramp() {
  console.log(`capacity benchmark: ${cpus().length} cores, ${databaseName}, steps ${steps.join(', ')} people, ${stepSeconds} s measured after a ${rampSeconds} s ramp and 10 s settling each, at most ${maxMinutes} minutes\n`);
  console.log(HEADER);
  const t0 = performance.now();
  const readings: Reading[] = [];
  let stoppedBy = '';
  for (const people of steps) {
    const elapsedMinutes = (performance.now() - t0) / 60_000;
    if (readings.length > 0 && elapsedMinutes + (rampSeconds + 10 + stepSeconds + 30) / 60 > maxMinutes) {
      stoppedBy = `the time limit (${maxMinutes} minutes) before ${people} people`;
      break;
    }
    await grow(people);
    await new Promise((r) => setTimeout(r, (rampSeconds + 10) * 1000));
    const r = await measure(people, stepSeconds);
    readings.push(r);
    console.log(line(r));
    if (!r.passed) {
      console.log(`        p99 by class (ms): ${Object.entries(r.p99).map(([k, v]) => `${k} ${v}`).join(', ')}`);
      for (const e of r.errors.slice(0, 5)) console.log(`        ${e}`);
      stoppedBy = `${people} people: ${r.failure}`;
      break;
    }
  }
  const capacity = readings.filter((r) => r.passed).at(-1);
  if (!capacity) {
    console.log(`\nno step passed (${stoppedBy})`);
    return;
  }
  console.log(`\ncapacity: ${capacity.people} simultaneous people, ${capacity.messagesPerSecond.toFixed(1)} messages/s, ${capacity.requestsPerSecond.toFixed(0)} requests/s (stopped by ${stoppedBy || 'the last step'})`);
  console.log(`there: the service's CPU ${pct(capacity.serviceCpu)} of a core (its event loop's thread ${pct(capacity.eventLoopCpu)}, loop delay p99 ${capacity.loopDelayP99.toFixed(0)} ms), RSS ${capacity.rssMiB.toFixed(0)} MiB; PostgreSQL ${pct(capacity.databaseCpu)}, this load generator ${pct(capacity.generatorCpu)} (RSS ${capacity.generatorRssMiB.toFixed(0)} MiB), the rest of the machine ${pct(capacity.otherCpu)}`);
  console.log(`p99 by class there (ms): ${Object.entries(capacity.p99).map(([k, v]) => `${k} ${v}`).join(', ')}; webhooks received ${capacity.webhooksPerSecond.toFixed(1)}/s`);
  const figures: Figures = { 'capacity.people': capacity.people, ...figuresOf('capacity', capacity) };
  for (const r of readings) Object.assign(figures, figuresOf(`steps.${r.people}`, r));
  // BENCH_RECORD=0: a trial (a profile, a short run) that must not count among the runs on record.
  if (process.env.BENCH_RECORD !== '0') writeResults('capacity', figures, { model: MODEL, limits: LIMITS, steps, step_seconds: stepSeconds, stopped_by: stoppedBy || 'last step', p99_by_class: capacity.p99 });
}

/** Half the capacity on record for this database (the median of its runs), unless BENCH_SOAK_PEOPLE says. */
function soakPeople(): number {
  if (process.env.BENCH_SOAK_PEOPLE) return Number(process.env.BENCH_SOAK_PEOPLE);
  const database = onPostgres ? 'postgres' : 'pglite';
  const runs = runsOf(JSON.parse(readFileSync(`${resultsDir()}capacity.json`, 'utf8'))).filter((r) => r.database === database && typeof r.figures['capacity.people'] === 'number');
  if (runs.length === 0) throw new Error('no capacity on record for this database: run npm run bench:capacity first, or set BENCH_SOAK_PEOPLE');
  // The median as docs/benchmarks.md takes it (the mean of the middle two of an even count), so the soak runs
  // at half the capacity the docs show.
  const sorted = runs.map((r) => r.figures['capacity.people']!).sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return Math.max(50, Math.round(median / 2 / 50) * 50);
}

async function soak() {
  const people = soakPeople();
  console.log(`capacity soak: ${cpus().length} cores, ${databaseName}, ${people} people (half the capacity on record) for ${soakMinutes} minutes, sampled each minute\n`);
  console.log(HEADER);
  await grow(people);
  await new Promise((r) => setTimeout(r, (rampSeconds + 10) * 1000));
  const minutes: Reading[] = [];
  for (let m = 0; m < soakMinutes; m++) {
    const r = await measure(people, 60);
    minutes.push(r);
    console.log(`${line(r)}  (minute ${m + 1})`);
  }
  // Minutes 10–20 against the last ten of an hour; a shorter soak compares the same shares of its length.
  const span = Math.max(1, Math.round(soakMinutes / 6));
  const early = minutes.slice(span, 2 * span);
  const last = minutes.slice(-span);
  const median = (rs: Reading[], f: (r: Reading) => number) => percentile(rs.map(f), 50);
  const worstP99 = (r: Reading) => Math.max(r.p99[r.worstClass] ?? 0, r.deliveryP99);
  const growth = {
    rss: median(last, (r) => r.rssMiB) / median(early, (r) => r.rssMiB) - 1,
    p99: median(last, worstP99) / median(early, worstP99) - 1,
  };
  const errors = minutes.reduce((n, r) => n + r.failed, 0);
  const flat = growth.rss <= 0.1 && growth.p99 <= 0.1 && errors === 0;
  console.log(`\nthe last ${span} minute(s) to minutes ${span + 1}–${2 * span}: RSS ${(growth.rss * 100).toFixed(1)}%, worst p99 ${(growth.p99 * 100).toFixed(1)}%; ${errors} errors: ${flat ? 'flat' : 'NOT flat'}`);
  const figures: Figures = {
    people,
    minutes: soakMinutes,
    rss_growth_share: Number(growth.rss.toFixed(3)),
    p99_growth_share: Number(growth.p99.toFixed(3)),
    errors,
  };
  minutes.forEach((r, i) => Object.assign(figures, { [`minute.${i + 1}.rss_mib`]: Math.round(r.rssMiB), [`minute.${i + 1}.worst_p99_ms`]: Math.round(worstP99(r)) }));
  // A shorter soak is a trial of the script, not the soak the goals name.
  if (soakMinutes >= 60 || process.env.BENCH_RECORD === '1') writeResults('capacity-soak', figures, { model: MODEL });
}

try {
  if (soakMinutes > 0) await soak();
  else await ramp();
} finally {
  stopped = true;
  clearInterval(sweeper);
  await stopVacuuming();
  for (const t of tenants) {
    for (const a of t.agents) a.ws?.terminate();
    for (const v of t.visitors) v.ws?.terminate();
  }
  await service.stop();
  await pool.close();
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
  // Timers of the model still pending end with the process.
  process.exit(process.exitCode ?? 0);
}
