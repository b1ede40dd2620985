import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import type { Database } from '../../src/db/database.ts';
import * as authRepo from '../../src/auth/auth.repository.ts';
import * as tenantRepo from '../../src/tenants/tenant.repository.ts';
import { newId } from '../../src/shared/ids.ts';
import { getHarness } from './harness.ts';

export const PASSWORD = 'correct horse battery staple';

export const uniqueEmail = (label = 'user') => `${label}-${randomUUID()}@example.test`;

export interface TestTenant {
  tenantId: string;
  owner: { userId: string; email: string; accessToken: string; refreshToken: string };
}

/** A fresh tenant, signed up through the API, with its owner logged in. */
export async function createTenant(options: { name?: string; timezone?: string } = {}): Promise<TestTenant> {
  const { app } = await getHarness();
  const email = uniqueEmail('owner');
  const res = await request(app)
    .post('/api/v1/auth/register')
    .send({ email, password: PASSWORD, name: 'Owner', tenant_name: options.name ?? `Tenant ${randomUUID()}`, timezone: options.timezone })
    .expect(201);
  return {
    tenantId: res.body.tenant.id,
    owner: { userId: res.body.user.id, email, accessToken: res.body.access_token, refreshToken: res.body.refresh_token },
  };
}

/** Adds an active member straight into the database: faster than an invitation, and tests of invitations make their own. */
export async function addMember(
  tenant: TestTenant,
  options: { role?: 'owner' | 'admin' | 'agent'; seat?: 'full' | 'lite'; status?: 'active' | 'invited'; database?: Database } = {},
): Promise<{ userId: string; email: string }> {
  const database = options.database ?? (await getHarness()).database;
  const email = uniqueEmail(options.role ?? 'agent');
  const { passwords } = (await getHarness()).deps;
  const passwordHash = await passwords.hash(PASSWORD);
  return database.asSystem(async (trx) => {
    const user = await authRepo.insertUser(trx, { id: newId('user'), email, name: 'Member', password_hash: passwordHash });
    await tenantRepo.insertMembership(trx, {
      tenant_id: tenant.tenantId,
      user_id: user.id,
      role: options.role ?? 'agent',
      seat: options.seat ?? 'full',
      status: options.status ?? 'active',
    });
    return { userId: user.id, email };
  });
}

export async function login(email: string, tenantId?: string): Promise<string> {
  const { app } = await getHarness();
  const res = await request(app)
    .post('/api/v1/auth/login')
    .send({ email, password: PASSWORD, ...(tenantId ? { tenant_id: tenantId } : {}) })
    .expect(200);
  return res.body.access_token;
}

/** A visitor record straight in the database, for tests about agents' side; widget tests start real widget sessions. */
export async function createVisitor(tenant: TestTenant, options: { name?: string } = {}): Promise<string> {
  const { database } = await getHarness();
  const id = newId('visitor');
  await database.withTenant(tenant.tenantId, (trx) =>
    trx.insertInto('visitors').values({ id, tenant_id: tenant.tenantId, name: options.name ?? null }).execute(),
  );
  return id;
}

/** A conversation with a new visitor, started through the API by the owner (open, unassigned). */
export async function createConversation(
  tenant: TestTenant,
  body: Record<string, unknown> = {},
  token = tenant.owner.accessToken,
  via?: Express,
): Promise<Record<string, any>> {
  const app = via ?? (await getHarness()).app;
  const visitorId = body.visitor_id || body.contact_id ? undefined : await createVisitor(tenant);
  const res = await request(app)
    .post('/api/v1/conversations')
    .set('Authorization', `Bearer ${token}`)
    .send({ ...(visitorId ? { visitor_id: visitorId } : {}), ...body });
  if (res.status !== 201) throw new Error(`createConversation: ${res.status} ${res.text}`);
  return res.body;
}

/** The events the outbox holds for a conversation, oldest first. */
export async function eventsOf(tenant: TestTenant, conversationId: string) {
  const { database } = await getHarness();
  return database.withTenant(tenant.tenantId, (trx) =>
    trx
      .selectFrom('events')
      .select(['type', 'data', 'internal', 'recipients', 'conversation_id'])
      .where('conversation_id', '=', conversationId)
      .orderBy('position')
      .execute(),
  );
}

export async function messagesOf(tenant: TestTenant, conversationId: string) {
  const { database } = await getHarness();
  return database.withTenant(tenant.tenantId, (trx) =>
    trx.selectFrom('messages').selectAll().where('conversation_id', '=', conversationId).orderBy('created_at').orderBy('id').execute(),
  );
}
