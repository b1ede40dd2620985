// `npm run demo`: the service, a tenant with a widget allowed on `localhost`, and a shop's website with the
// chat bubble on it, on a second origin (another port). Prints how to answer as an agent. Ctrl+C stops both.
// Its data lives in DATA_DIR (default ./data/demo, apart from `npm start`'s ./data); running it again
// reuses the tenant and widget.
import { loadConfig } from '../src/config.ts';
import { startService } from '../src/server.ts';
import { startDemoSite } from './demo-site.ts';

const OWNER = { email: 'owner@widget-demo.test', password: 'demo-password-123', name: 'Olivia Owner', tenant_name: 'Acme Outdoor Gear' };
const SETTINGS = {
  color: '#0a7d4f',
  greeting: 'Hi! Questions about sizes, shipping or returns? We usually answer within minutes.',
  position: 'bottom-right',
  away_message: 'We cannot take new chats right now. Leave your message here and try again in a little while.',
};

const config = loadConfig({ DATA_DIR: './data/demo', LOG_LEVEL: 'error', HOST: '127.0.0.1', ...process.env });
const service = await startService(config);
const base = `${service.url}/api`;

async function call<T>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(body ? { 'Content-Type': 'application/json' } : {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function seed(): Promise<{ widgetId: string }> {
  type Tokens = { access_token: string };
  let login = await call<Tokens>('POST', '/v1/auth/login', { email: OWNER.email, password: OWNER.password });
  if (login.status === 401) {
    const registered = await call<Tokens>('POST', '/v1/auth/register', OWNER);
    if (registered.status !== 201) throw new Error(`could not register the demo owner: ${JSON.stringify(registered.body)}`);
    login = registered;
  }
  const token = login.body.access_token;
  const widgets = await call<{ data: { id: string; name: string }[] }>('GET', '/v1/widgets', undefined, token);
  let widgetId = widgets.body.data.find((w) => w.name === 'Demo shop')?.id;
  if (!widgetId) widgetId = (await call<{ id: string }>('POST', '/v1/widgets', { name: 'Demo shop', settings: SETTINGS }, token)).body.id;
  else await call('PATCH', `/v1/widgets/${widgetId}`, { settings: SETTINGS }, token);
  // 409 when it is there already from an earlier run.
  await call('POST', '/v1/domains', { widget_id: widgetId, domain: 'localhost' }, token);
  return { widgetId };
}

try {
  const { widgetId } = await seed();
  const sitePort = Number(process.env.DEMO_SITE_PORT ?? (config.port === 0 ? 0 : config.port + 1));
  const site = await startDemoSite({ scriptUrl: `${service.url}/widget.js`, widgetId, port: sitePort });
  console.log(`
The chat demo is running.

  Demo shop (the visitor's side):  ${site.url}/
  The same page under hostile CSS: ${site.url}/hostile
  API docs (the agent's side):     ${service.url}/api/docs
  The widget's script:             ${service.url}/widget.js   (widget ${widgetId})

Open the shop, click the bubble and write. Then answer as the agent, from the API docs page (Authorize with
the access token) or with curl:

  TOKEN=$(curl -s -X POST ${base}/v1/auth/login -H 'Content-Type: application/json' \\
    -d '{"email":"${OWNER.email}","password":"${OWNER.password}"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).access_token')
  CONV=$(curl -s ${base}/v1/conversations -H "Authorization: Bearer $TOKEN" | node -pe 'JSON.parse(require("fs").readFileSync(0)).data[0].id')
  curl -s -X POST ${base}/v1/messages -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
    -d "{\\"conversation_id\\":\\"$CONV\\",\\"content\\":\\"Hello from the team!\\"}"
  curl -s -X POST ${base}/v1/conversations/$CONV/close -H "Authorization: Bearer $TOKEN"    # the survey appears

Ctrl+C stops the demo.`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void site
        .close()
        .then(() => service.stop())
        .then(() => process.exit(0));
    });
  }
} catch (err) {
  await service.stop();
  throw err;
}
