import { expect } from 'chai';
import request from 'supertest';
import { loadContract } from '../../src/http/contract.ts';
import { newId, newUuid } from '../../src/shared/ids.ts';
import { addMember, createTenant, login, type TestTenant } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

// Walks every operation of the contract and proves that each refuses what its `security` and
// `x-access` say it must. Access is checked before the request is validated, so no bodies are needed.
const contract = loadContract();
const ALL_SCOPES: string[] = contract.document.components.schemas.ApiKeyScope.enum;

interface Fixture {
  tenant: TestTenant;
  /** A visitor session on a widget allowed on https://shop.example. */
  visitorToken: string;
  /** Whom {userId} names: a member the walk may change or remove without locking itself out. */
  targetUserId: string;
  agentToken: string;
  liteOwnerToken: string;
  fullKey: string;
  /** A bot's key (scope `bot`), which only operations naming that scope take. */
  botKey: string;
  /** A key with one scope that no operation asks for alone. */
  /** Keys holding one scope each that some operation does not need: the test picks one the operation lacks. */
  poorKeys: Record<string, string>;
}

function operationObject(path: string, method: string) {
  return contract.document.paths[path][method] as {
    security?: Record<string, string[]>[];
    'x-access'?: { roles?: string[]; seat?: string };
    parameters?: { $ref?: string; name?: string }[];
  };
}

// Path parameters filled with well-formed values: the caller's own tenant and user, fresh ids otherwise.
function concretePath(path: string, fx: Fixture): string {
  const item = contract.document.paths[path];
  const refs = [...(item.parameters ?? [])].map((p: { $ref: string }) => p.$ref?.split('/').pop());
  return (
    '/api' +
    path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      if (name === 'userId') return fx.targetUserId;
      if (name === 'delivery_id') return newId('webhookDelivery');
      if (name === 'label_id' || refs.includes('LabelIdPath')) return newId('label');
      if (refs.includes('TenantIdPath')) return fx.tenant.tenantId;
      if (refs.includes('DepartmentIdPath')) return newUuid();
      if (refs.includes('ApiKeyIdPath')) return newId('apiKey');
      if (refs.includes('ConversationIdPath') || refs.includes('ConversationIdParam')) return newId('conversation');
      if (refs.includes('ContactIdPath')) return newId('contact');
      if (refs.includes('CannedResponseIdPath')) return newId('cannedResponse');
      if (refs.includes('VisitorIdPath')) return newId('visitor');
      if (refs.includes('WidgetIdPath')) return newId('widget');
      if (refs.includes('DomainIdPath')) return newId('domain');
      if (refs.includes('FileIdPath')) return newId('file');
      if (refs.includes('WebhookIdPath')) return newId('webhook');
      if (refs.includes('BotIdPath')) return newId('bot');
      if (refs.includes('WorkflowIdPath')) return newId('workflow');
      throw new Error(`no value for {${name}} in ${path}: teach access.test.ts about it`);
    })
  );
}

async function call(method: string, path: string, headers: Record<string, string>) {
  const { app } = await getHarness();
  const agent = request(app) as unknown as Record<string, (p: string) => request.Test>;
  return agent[method]!(path).set(headers);
}

describe('access rules of every operation in the contract', () => {
  const fx = {} as Fixture;

  before(async () => {
    const { app } = await getHarness();
    fx.tenant = await createTenant();
    const agent = await addMember(fx.tenant, { role: 'agent', seat: 'full' });
    const liteOwner = await addMember(fx.tenant, { role: 'owner', seat: 'lite' });
    fx.agentToken = await login(agent.email);
    fx.targetUserId = (await addMember(fx.tenant, { role: 'agent' })).userId;
    fx.liteOwnerToken = await login(liteOwner.email);
    const auth = { Authorization: `Bearer ${fx.tenant.owner.accessToken}` };
    fx.fullKey = (await request(app).post('/api/v1/api-keys').set(auth).send({ name: 'all', scopes: ALL_SCOPES }).expect(201)).body.key;
    fx.poorKeys = {};
    for (const scope of ['billing:read', 'webhooks:read']) {
      fx.poorKeys[scope] = (await request(app).post('/api/v1/api-keys').set(auth).send({ name: `poor ${scope}`, scopes: [scope] }).expect(201)).body.key;
    }
    fx.botKey = (await request(app).post('/api/v1/bots').set(auth).send({ name: 'walk', kind: 'faq' }).expect(201)).body.api_key;
    const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'walk' }).expect(201)).body;
    await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'shop.example' }).expect(201);
    fx.visitorToken = (
      await request(app).post('/api/v1/widget/sessions').set('Origin', 'https://shop.example').send({ widget_id: widget.id, page_url: 'https://shop.example/' }).expect(201)
    ).body.visitor_token;
  });

  for (const op of contract.operations) {
    const spec = operationObject(op.path, op.method);
    const security: Record<string, string[]>[] = spec.security ?? contract.document.security ?? [];
    const isPublic = security.length === 0 || security.some((r) => Object.keys(r).length === 0);
    const keyRequirements = security.filter((r) => 'apiKeyAuth' in r).map((r) => r.apiKeyAuth!);
    // An integration's key needs these scopes; a bot's key passes only where `bot` is named.
    const apiKeyScopes = keyRequirements.find((scopes) => !scopes.includes('bot'));
    const botAllowed = keyRequirements.some((scopes) => scopes.includes('bot'));
    const roles = spec['x-access']?.roles;
    const label = `${op.operationId} (${op.method.toUpperCase()} ${op.path})`;

    if (isPublic) {
      it(`${label} is public: no credential is needed`, async () => {
        const res = await call(op.method, concretePath(op.path, fx), {});
        expect(res.status, res.text).not.to.be.oneOf([401, 403]);
      });
      continue;
    }

    it(`${label}: no credential is 401`, async () => {
      expectProblem(await call(op.method, concretePath(op.path, fx), {}), 401, 'ERR_UNAUTHENTICATED');
    });

    if (security.some((r) => 'visitorAuth' in r)) {
      it(`${label} is for visitors: a member's token is 401, an API key 403, a visitor's session gets past`, async () => {
        const path = concretePath(op.path, fx);
        expectProblem(await call(op.method, path, { Authorization: `Bearer ${fx.tenant.owner.accessToken}`, Origin: 'https://shop.example' }), 401, 'ERR_UNAUTHENTICATED');
        expectProblem(await call(op.method, path, { 'X-API-Key': fx.fullKey, 'X-Tenant-ID': fx.tenant.tenantId }), 403, 'ERR_FORBIDDEN');
        const res = await call(op.method, path, { Authorization: `Bearer ${fx.visitorToken}`, Origin: 'https://shop.example' });
        expect(res.status, res.text).not.to.be.oneOf([401, 403]);
      });
      continue;
    }

    it(`${label}: an owner's token gets past the access rules`, async () => {
      const res = await call(op.method, concretePath(op.path, fx), { Authorization: `Bearer ${fx.tenant.owner.accessToken}` });
      expect(res.status, res.text).not.to.be.oneOf([401, 403]);
    });

    if (keyRequirements.length === 0) {
      it(`${label}: an API key, a bot's too, is 403 ERR_USER_TOKEN_REQUIRED`, async () => {
        const res = await call(op.method, concretePath(op.path, fx), { 'X-API-Key': fx.fullKey, 'X-Tenant-ID': fx.tenant.tenantId });
        expectProblem(res, 403, 'ERR_USER_TOKEN_REQUIRED');
        expectProblem(await call(op.method, concretePath(op.path, fx), { 'X-API-Key': fx.botKey, 'X-Tenant-ID': fx.tenant.tenantId }), 403, 'ERR_USER_TOKEN_REQUIRED');
      });
    } else if (!apiKeyScopes) {
      it(`${label}: only a bot's key: an integration's key with every scope is 403`, async () => {
        expectProblem(await call(op.method, concretePath(op.path, fx), { 'X-API-Key': fx.fullKey, 'X-Tenant-ID': fx.tenant.tenantId }), 403, 'ERR_FORBIDDEN');
      });
    } else {
      it(`${label}: an API key without ${apiKeyScopes.join(', ')} is 403; with it, it gets past`, async () => {
        const path = concretePath(op.path, fx);
        const poorKey = Object.entries(fx.poorKeys).find(([scope]) => !apiKeyScopes.includes(scope))![1];
        expectProblem(await call(op.method, path, { 'X-API-Key': poorKey, 'X-Tenant-ID': fx.tenant.tenantId }), 403, 'ERR_FORBIDDEN');
        const res = await call(op.method, path, { 'X-API-Key': fx.fullKey, 'X-Tenant-ID': fx.tenant.tenantId });
        expect(res.status, res.text).not.to.be.oneOf([401, 403]);
      });
    }

    if (keyRequirements.length > 0) {
      it(`${label}: a bot's key ${botAllowed ? 'gets past' : 'is 403'}`, async () => {
        const res = await call(op.method, concretePath(op.path, fx), { 'X-API-Key': fx.botKey, 'X-Tenant-ID': fx.tenant.tenantId });
        if (botAllowed) expect(res.status, res.text).not.to.be.oneOf([401, 403]);
        else expectProblem(res, 403, 'ERR_FORBIDDEN');
      });
    }

    if (roles && !roles.includes('agent')) {
      it(`${label}: an agent is 403 (needs ${roles.join(' or ')})`, async () => {
        expectProblem(await call(op.method, concretePath(op.path, fx), { Authorization: `Bearer ${fx.agentToken}` }), 403, 'ERR_FORBIDDEN');
      });
    }

    if (spec['x-access']?.seat === 'full') {
      it(`${label}: a lite seat is 403 ERR_LITE_SEAT`, async () => {
        expectProblem(await call(op.method, concretePath(op.path, fx), { Authorization: `Bearer ${fx.liteOwnerToken}` }), 403, 'ERR_LITE_SEAT');
      });
    }
  }
});
