import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type Stripe from 'stripe';
import { parsePlans } from '../../src/billing/plans.ts';
import { type CodeSample, operationsOf, type OperationRef, variablesOf } from '../../src/http/code-samples.ts';
import { loadContract } from '../../src/http/contract.ts';
import type { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { eventually } from '../support/eventually.ts';
import { FakeStripe, stripeClientOf } from '../support/fake-stripe.ts';
import { getHarness, sentMail } from '../support/harness.ts';
import { addMember, createVisitor, PASSWORD, type TestTenant, uniqueEmail } from '../support/factories.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const run = promisify(execFile);
const CLIENT = pathToFileURL(join(import.meta.dirname, '..', '..', 'clients', 'index.ts')).href;
const ORIGIN = 'https://shop.example.com';
/** The page of the widget whose conversations a bot holds (the handoff sample's). */
const BOT_ORIGIN = 'https://help.example.com';
const STRIPE_SECRET_KEY = 'sk_test_doc_samples';
const STRIPE_WEBHOOK_SECRET = 'whsec_doc_samples_0123456789abcdef';
// Billing as an installation that sells through Stripe configures it (Stripe itself a fake on loopback),
// with the free plan unlimited: the samples add members and conversations beyond its default limits.
const PLANS = parsePlans(JSON.stringify({ free: { seats: null, conversations_per_period: null, storage_bytes: null }, pro: { stripe_price_id: 'price_pro' } }));
// A 1x1 PNG: what the upload samples send.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

type Vars = Record<string, string>;

// Every operation's samples (curl, TypeScript with the SDK), as the reference shows them (taken from the
// document the reference pages load, /api/docs/reference/openapi.json), run against the service on a loopback port with the variables they name set from a prepared tenant; each answer is
// checked against the contract (a declared success status and media type; the service's own response
// validation is on, so a body that breaks its schema would have been a 500). Every operation succeeds:
// billing is configured against a fake Stripe on loopback (test/support/fake-stripe.ts), a webhook
// dispatcher runs (deliveries to a receiver on loopback; names other than localhost do not resolve in
// tests, so the samples' example endpoints are never reached), and a bot holds a conversation to hand off.
// Then the getting-started page's steps, as docs/getting-started.md writes them, in order.
describe('the reference\'s samples and the getting-started page run against the service', function () {
  this.timeout(600_000);
  let rt: RealtimeServer;
  let api: string;
  let dir: string;
  let stripe: Stripe;
  let dispatcher: WebhookDispatcher;
  let receiver: Receiver;
  /** The REST document the reference serves: its operations carry the samples the pages show. */
  let served: Record<string, any>;
  const fakeStripe = new FakeStripe();
  const document = loadContract().document;

  before(async () => {
    stripe = stripeClientOf(await fakeStripe.start(), STRIPE_SECRET_KEY);
    rt = await startRealtime({ config: { billing: { stripe: { secretKey: STRIPE_SECRET_KEY, webhookSecret: STRIPE_WEBHOOK_SECRET }, plans: PLANS } }, stripe });
    api = rt.wsUrl.replace(/^ws/, 'http').replace(/\/v1\/ws$/, '');
    receiver = await startReceiver();
    dispatcher = testDispatcher(await getHarness(), { bus: rt.bus, pollMs: 100 });
    rt.services.webhooks.onDeliveryDue(() => dispatcher.wake());
    dispatcher.start();
    const res = await fetch(`${api}/docs/reference/openapi.json`);
    if (!res.ok) throw new Error(`the reference's document: ${res.status}`);
    served = (await res.json()) as Record<string, any>;
    dir = await mkdtemp(join(tmpdir(), 'chat-doc-samples-'));
    await writeFile(join(dir, 'photo.png'), PNG);
  });
  after(async () => {
    await dispatcher?.stop();
    await rt?.close();
    await receiver?.close();
    await fakeStripe.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A call to the service, for the fixture (not a sample). */
  async function call(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: { ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}), ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...options.headers },
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  async function register(): Promise<TestTenant> {
    const email = uniqueEmail('owner');
    const body = await call('POST', '/v1/auth/register', { body: { email, password: PASSWORD, name: 'Owner', tenant_name: 'Samples' } });
    return { tenantId: body.tenant.id, owner: { userId: body.user.id, email, accessToken: body.access_token, refreshToken: body.refresh_token } };
  }

  const mailToken = (to: string) => {
    const mail = [...sentMail].reverse().find((m) => JSON.stringify(m.to).includes(to));
    const token = /token=([\w.-]+)/.exec(mail?.text ?? '')?.[1];
    if (!token) throw new Error(`no mail with a token to ${to}`);
    return token;
  };

  /** The request example of an operation (the contract's), for the fixture's own objects. */
  const example = (opId: string): Record<string, any> => {
    const ref = operationsOf(document).find((r) => r.operation.operationId === opId)!;
    return structuredClone(ref.operation.requestBody.content['application/json'].example);
  };

  interface Fixture {
    vars: Vars;
    tenant: TestTenant;
    /** A visitor of the widget whose conversations the fixture's bot holds. */
    botVisitorToken: string;
  }

  /** A tenant with one of everything the samples name. */
  async function fixture(): Promise<Fixture> {
    const t = await register();
    const token = t.owner.accessToken;
    const member = await addMember(t);
    const department = await call('POST', '/v1/departments', { token, body: { name: 'Fixture' } });
    await call('PUT', `/v1/departments/${department.id}/members/${member.userId}`, { token });
    const widget = await call('POST', '/v1/widgets', { token, body: { name: 'Shop' } });
    const domain = await call('POST', '/v1/domains', { token, body: { widget_id: widget.id, domain: 'shop.example.com' } });
    const session = await call('POST', '/v1/widget/sessions', { headers: { Origin: ORIGIN }, body: { widget_id: widget.id, page_url: `${ORIGIN}/` } });
    const visitorConversation = await call('POST', '/v1/widget/conversations', { token: session.visitor_token, headers: { Origin: ORIGIN }, body: { content: 'Hello' } });
    const conversation = await call('POST', '/v1/conversations', { token, body: { visitor_id: await createVisitor(t) } });
    const contact = await call('POST', '/v1/contacts', { token, body: { ...example('createContact'), email: uniqueEmail('contact') } });
    const canned = await call('POST', '/v1/canned-responses', { token, body: { ...example('createCannedResponse'), shortcut: 'fixture' } });
    const label = await call('POST', '/v1/labels', { token, body: { ...example('createLabel'), name: 'fixture' } });
    const form = new FormData();
    form.append('conversation_id', conversation.id);
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'photo.png');
    const fileRes = await fetch(`${api}/v1/files`, { method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: form });
    const file = (await fileRes.json()) as { id: string };
    if (!fileRes.ok) throw new Error(`upload: ${JSON.stringify(file)}`);
    const signed = new URL((await call('GET', `/v1/files/${file.id}`, { token })).url, api);
    const key = await call('POST', '/v1/api-keys', { token, body: { ...example('createApiKey'), name: 'fixture' } });
    // An endpoint on loopback, and a delivery the dispatcher made to it (a test event's).
    const webhook = await call('POST', '/v1/webhooks', { token, body: { ...example('createWebhook'), url: receiver.url } });
    await call('POST', `/v1/webhooks/${webhook.id}/test`, { token });
    const delivery = await eventually(
      async () => (await call('GET', `/v1/webhooks/${webhook.id}/deliveries`, { token })).data.find((d: { status: string }) => d.status === 'succeeded') as { id: string } | undefined,
      'the test event delivered to the fixture\'s endpoint',
    );
    const bot = await call('POST', '/v1/bots', { token, body: { ...example('createBot'), name: 'Fixture bot', handoff_department_id: department.id } });
    // A widget the bot answers: the conversations its visitors start are the bot's until handed off.
    const botWidget = await call('POST', '/v1/widgets', { token, body: { name: 'Help', settings: { bot_id: bot.id } } });
    await call('POST', '/v1/domains', { token, body: { widget_id: botWidget.id, domain: new URL(BOT_ORIGIN).hostname } });
    const botSession = await call('POST', '/v1/widget/sessions', { headers: { Origin: BOT_ORIGIN }, body: { widget_id: botWidget.id, page_url: `${BOT_ORIGIN}/` } });
    const workflow = await call('POST', '/v1/workflows', { token, body: { ...example('createWorkflow'), name: 'Fixture' } });
    return {
      tenant: t,
      botVisitorToken: botSession.visitor_token,
      vars: {
        API: api,
        TOKEN: token,
        REFRESH_TOKEN: t.owner.refreshToken,
        TENANT_ID: t.tenantId,
        USER_ID: member.userId,
        EMAIL: t.owner.email,
        PASSWORD,
        DEPARTMENT_ID: department.id,
        HANDOFF_DEPARTMENT_ID: department.id,
        WIDGET_ID: widget.id,
        DOMAIN_ID: domain.id,
        ORIGIN,
        VISITOR_TOKEN: session.visitor_token,
        VISITOR_ID: session.visitor_id,
        CONVERSATION_ID: conversation.id,
        CONTACT_ID: contact.id,
        CANNED_RESPONSE_ID: canned.id,
        LABEL_ID: label.id,
        FILE_ID: file.id,
        FILE_PATH: join(dir, 'photo.png'),
        EXPIRES: signed.searchParams.get('expires') ?? '',
        SIGNATURE: signed.searchParams.get('signature') ?? '',
        API_KEY_ID: key.id,
        WEBHOOK_ID: webhook.id,
        DELIVERY_ID: delivery.id,
        BOT_ID: bot.id,
        WORKFLOW_ID: workflow.id,
        Q: 'Hello',
        UNTIL: new Date(Date.now() + 86_400_000).toISOString(),
        FROM: new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10),
        TO: new Date().toISOString().slice(0, 10),
        VISITOR_CONVERSATION_ID: visitorConversation.id,
      },
    };
  }

  /** The body a curl sample sends: the sample run with its variables set and curl standing in for `cat`. */
  async function curlBody(sample: CodeSample, vars: Vars): Promise<string> {
    const { stdout } = await run('bash', ['-c', `curl() { command cat; }\n${sample.source}\n`], { cwd: dir, env: { PATH: process.env.PATH, HOME: dir, ...vars } });
    return stdout;
  }

  /** What an operation's samples need beyond the shared fixture: its own credentials, or an object in the right state. */
  async function varsFor(opId: string, f: Fixture, sample: CodeSample): Promise<Vars> {
    const v = f.vars;
    const token = v.TOKEN!;
    const fresh = async () => (await call('POST', '/v1/conversations', { token, body: { visitor_id: await createVisitor(f.tenant) } })).id as string;
    const freshLogin = async () => (await call('POST', '/v1/auth/login', { body: { email: v.EMAIL, password: PASSWORD } })).refresh_token as string;
    switch (opId) {
      case 'register':
        return { EMAIL: uniqueEmail('sample') };
      case 'refreshToken':
      case 'logout':
        return { REFRESH_TOKEN: await freshLogin() };
      case 'verifyEmail': {
        const other = await register();
        return { MAIL_TOKEN: mailToken(other.owner.email) };
      }
      case 'resetPassword': {
        const other = await register();
        await call('POST', '/v1/auth/forgot-password', { body: { email: other.owner.email } });
        return { MAIL_TOKEN: mailToken(other.owner.email), PASSWORD: 'a new password 123' };
      }
      case 'acceptInvitation': {
        const email = uniqueEmail('invited');
        await call('POST', `/v1/tenants/${v.TENANT_ID}/members`, { token, body: { email, role: 'agent' } });
        return { MAIL_TOKEN: mailToken(email) };
      }
      case 'addTenantMember':
        return { EMAIL: uniqueEmail('member') };
      case 'updateWidget':
      case 'rotateWidgetSecret':
        // Its example may require a verified identity: the visitors' samples keep the fixture's widget.
        return { WIDGET_ID: (await call('POST', '/v1/widgets', { token, body: { name: 'Another' } })).id };
      case 'updateConversation':
      case 'assignConversation':
      case 'transferConversation':
      case 'closeConversation':
      case 'snoozeConversation':
        return { CONVERSATION_ID: await fresh() };
      case 'handoffConversation': {
        const { id } = await call('POST', '/v1/widget/conversations', { token: f.botVisitorToken, headers: { Origin: BOT_ORIGIN }, body: { content: 'I want a refund' } });
        const { bot_state } = await call('GET', `/v1/conversations/${id}`, { token });
        if (bot_state !== 'active') throw new Error(`the bot widget's conversation is ${bot_state}, not held by its bot`);
        return { CONVERSATION_ID: id };
      }
      case 'receiveBillingWebhook': {
        // Signed as Stripe signs (its library's test header, under the installation's webhook secret) over
        // the very bytes the sample sends: curl's here-document, or the SDK's JSON of the body.
        const payload = sample.lang === 'curl' ? await curlBody(sample, v) : JSON.stringify(example(opId));
        return { STRIPE_SIGNATURE: stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WEBHOOK_SECRET }) };
      }
      case 'reopenConversation':
      case 'unsnoozeConversation': {
        const id = await fresh();
        await call('POST', `/v1/conversations/${id}/${opId === 'reopenConversation' ? 'close' : 'snooze'}`, { token, body: opId === 'reopenConversation' ? undefined : { until: new Date(Date.now() + 3_600_000).toISOString() } });
        return { CONVERSATION_ID: id };
      }
      case 'listWidgetMessages':
      case 'sendWidgetMessage':
      case 'uploadWidgetFile':
        return { CONVERSATION_ID: v.VISITOR_CONVERSATION_ID! };
      case 'answerSurvey': {
        const { id } = await call('POST', '/v1/widget/conversations', { token: v.VISITOR_TOKEN, headers: { Origin: ORIGIN }, body: { content: 'A question' } });
        await call('POST', `/v1/conversations/${id}/close`, { token });
        return { CONVERSATION_ID: id };
      }
      case 'getWidgetFile': {
        const form = new FormData();
        form.append('conversation_id', v.VISITOR_CONVERSATION_ID!);
        form.append('file', new Blob([PNG], { type: 'image/png' }), 'photo.png');
        const res = await fetch(`${api}/v1/widget/files`, { method: 'POST', headers: { Authorization: `Bearer ${v.VISITOR_TOKEN}`, Origin: ORIGIN }, body: form });
        const file = (await res.json()) as { id: string };
        if (!res.ok) throw new Error(`widget upload: ${JSON.stringify(file)}`);
        return { FILE_ID: file.id };
      }
      default:
        return {};
    }
  }

  interface Answer {
    status: number;
    type: string;
    body: string;
  }

  async function runCurl(sample: CodeSample, vars: Vars): Promise<Answer> {
    // The sample as written, in bash, with its variables in the environment; a wrapper adds the status line.
    const script = `curl() { command curl -w '\\n__STATUS__ %{http_code} %{content_type}' "$@"; }\n${sample.source}\n`;
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, env: { PATH: process.env.PATH, HOME: dir, ...vars }, maxBuffer: 10 * 1024 * 1024 });
    const at = stdout.lastIndexOf('__STATUS__ ');
    const [status, type = ''] = stdout.slice(at + '__STATUS__ '.length).trim().split(' ');
    return { status: Number(status), type, body: stdout.slice(0, at) };
  }

  let moduleCount = 0;
  async function runTypeScript(sample: CodeSample, vars: Vars): Promise<unknown> {
    const declarations = variablesOf(sample).map((name) => `const ${name} = ${JSON.stringify(vars[name])};`).join('\n');
    const source = sample.source.replace(`from '@customer-chat/client'`, `from ${JSON.stringify(CLIENT)}`).replace(/^console\.log\(answer\);$/m, 'export { answer };');
    const file = join(dir, `sample-${moduleCount++}.ts`);
    await writeFile(file, `${declarations}\n${source}\n`);
    return ((await import(pathToFileURL(file).href)) as { answer: unknown }).answer;
  }

  /** The declared answer of a status: its media types. */
  function declared(ref: OperationRef, status: number): string[] | undefined {
    const response = ref.operation.responses[String(status)];
    if (!response) return undefined;
    const resolved = response.$ref ? document.components.responses[response.$ref.split('/').pop()] : response;
    return Object.keys(resolved.content ?? {});
  }

  /**
   * The order the samples run in, on one tenant: everything but deletions in the contract's order, then the
   * deletions last to first (a label off a conversation before the label goes, a domain before its widget).
   */
  const ordered = (refs: OperationRef[]) => [...refs.filter((r) => r.method !== 'delete'), ...refs.filter((r) => r.method === 'delete').reverse()];

  for (const lang of ['curl', 'TypeScript'] as const) {
    it(`every operation's ${lang} sample answers what the contract promises`, async () => {
      const f = await fixture();
      const failures: string[] = [];
      let ran = 0;
      const shown = ordered(operationsOf(served));
      expect(shown.map((r) => r.operation.operationId), 'the reference\'s operations').to.deep.equal(ordered(operationsOf(document)).map((r) => r.operation.operationId));
      for (const ref of shown) {
        const opId = ref.operation.operationId as string;
        const sample = (ref.operation['x-codeSamples'] as CodeSample[] | undefined)?.find((s) => s.lang === lang);
        if (!sample) {
          failures.push(`${opId}: the reference shows no ${lang} sample`);
          continue;
        }
        const vars = { ...f.vars, ...(await varsFor(opId, f, sample).catch((e: Error) => ({ __error: e.message }) as Vars)) };
        if (vars.__error) {
          failures.push(`${opId}: its fixture: ${vars.__error}`);
          continue;
        }
        const missing = variablesOf(sample).filter((name) => vars[name] === undefined || vars[name] === '');
        if (missing.length) {
          failures.push(`${opId}: no value for ${missing.join(', ')}`);
          continue;
        }
        try {
          if (lang === 'curl') {
            const answer = await runCurl(sample, vars);
            if (!(answer.status >= 200 && answer.status < 300) || !declared(ref, answer.status)) {
              failures.push(`${opId}: ${answer.status} ${answer.body.slice(0, 300)}`);
            } else if (!(declared(ref, answer.status) ?? []).some((t) => t === '*/*' || answer.type.startsWith(t))) {
              failures.push(`${opId}: ${answer.type} is not what ${answer.status} declares`);
            }
          } else {
            const answer = await runTypeScript(sample, vars);
            if (answer === undefined) failures.push(`${opId}: no answer`);
          }
          ran++;
        } catch (error) {
          failures.push(`${opId}: ${(error as Error).message.slice(0, 300)}`);
        }
      }
      expect(failures, `samples that did not run as the contract says (${ran} ran)`).to.deep.equal([]);
      expect(ran).to.equal(operationsOf(document).length);
    });
  }

  it('the getting-started page\'s steps, run in order as the page writes them, end with the socket receiving the agent\'s message', async () => {
    const page = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'getting-started.md'), 'utf8');
    const steps = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(steps.length).to.be.at.least(7);
    const source = steps
      .join('\n')
      .replace(`from '@customer-chat/client'`, `from ${JSON.stringify(CLIENT)}`)
      .replace(/console\.log\('received over the socket:', (.*)\);/, 'export const received = $1;');
    expect(source, 'the last step hands over what the socket received').to.include('export const received');
    const file = join(dir, 'getting-started.ts');
    await writeFile(file, source);
    process.env.CHAT_API = api;
    try {
      const { received } = (await import(pathToFileURL(file).href)) as { received: string };
      expect(received).to.equal('We do: two to four days.');
    } finally {
      delete process.env.CHAT_API;
    }
  });
});
