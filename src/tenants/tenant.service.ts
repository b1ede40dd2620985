import type { Logger } from 'pino';
import type { components } from '../../generated/api.ts';
import { findSession, findUserByEmail, insertInvitationToken, insertInvitedUser, revokeUserLogins } from '../auth/auth.service.ts';
import { newOpaqueToken } from '../auth/tokens.ts';
import { releaseConversationsOf } from '../conversations/conversation.service.ts';
import type { PlanLimits } from '../billing/billing.service.ts';
import type { Database, Tx } from '../db/database.ts';
import type { EventBus } from '../events/bus.ts';
import { inTenantTransaction } from '../events/outbox.ts';
import { SessionCache } from '../auth/session-cache.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Tenant } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import type { Mailer } from '../mail/mailer.ts';
import { addedToTenantMail, invitationMail } from '../mail/templates.ts';
import { conflict, forbidden, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { mergePatch } from '../shared/merge.ts';
import { pageOf } from '../shared/pagination.ts';
import type { UserPrincipal } from '../shared/principal.ts';
import { invalidTimeZone, isValidTimeZone } from '../shared/timezones.ts';
import * as repo from './tenant.repository.ts';

type TenantDto = components['schemas']['Tenant'];
type MemberDto = components['schemas']['Member'];
type MemberListDto = components['schemas']['MemberList'];
type Role = components['schemas']['Role'];
type Seat = components['schemas']['Seat'];

export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

export const toTenantDto = (t: Tenant): TenantDto => ({
  id: t.id,
  name: t.name,
  timezone: t.timezone,
  settings: t.settings,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

const toMemberDto = (m: { user_id: string; email: string; name: string; role: Role; seat: Seat; status: 'active' | 'invited'; created_at: Date }): MemberDto => ({
  ...m,
  created_at: m.created_at.toISOString(),
});

/** A new tenant and its owner's membership, in the caller's transaction (tenant creation and registration). */
export async function createTenantWithOwner(trx: Tx, input: { name: string; timezone: string; ownerId: string }): Promise<TenantDto> {
  const tenant = await repo.insertTenant(trx, { id: newId('tenant'), name: input.name, timezone: input.timezone });
  await repo.insertMembership(trx, { tenant_id: tenant.id, user_id: input.ownerId, role: 'owner', seat: 'full' });
  return toTenantDto(tenant);
}

export class TenantService {
  readonly #database: Database;
  readonly #sessions: SessionCache;
  readonly #mailer: Mailer;
  readonly #appUrl: string;
  readonly #logger: Logger;
  readonly #bus: EventBus;
  readonly #limits: PlanLimits;

  constructor(deps: { database: Database; mailer: Mailer; appUrl: string; logger: Logger; bus: EventBus; sessions?: SessionCache; limits: PlanLimits }) {
    this.#sessions = deps.sessions ?? new SessionCache();
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#limits = deps.limits;
    this.#mailer = deps.mailer;
    this.#appUrl = deps.appUrl;
    this.#logger = deps.logger;
  }

  /** Whether the caller's login is live, and their role and seat in the tenant if they are an active member. */
  findSession(tenantId: string, userId: string, sessionId: string) {
    return this.#sessions.lookup(tenantId, userId, sessionId, () =>
      this.#database.asSystem((trx) => findSession(trx, tenantId, userId, sessionId)),
    );
  }

  async createTenant(user: UserPrincipal, input: components['schemas']['TenantCreate']): Promise<TenantDto> {
    const timezone = input.timezone ?? 'UTC';
    if (!isValidTimeZone(timezone)) throw invalidTimeZone();
    return this.#database.asSystem((trx) => createTenantWithOwner(trx, { name: input.name, timezone, ownerId: user.userId }));
  }

  // A caller only ever reaches its own tenant: any other id is "not found", whether it exists or not.
  async getTenant(principal: Principal, id: string): Promise<TenantDto> {
    ownTenant(principal, id);
    const tenant = await this.#database.withTenant(principal.tenantId, (trx) => repo.findTenant(trx, id));
    if (!tenant) throw notFound('Tenant');
    return toTenantDto(tenant);
  }

  async updateTenant(principal: Principal, id: string, input: components['schemas']['TenantUpdate']): Promise<TenantDto> {
    ownTenant(principal, id);
    if (input.timezone !== undefined && !isValidTimeZone(input.timezone)) throw invalidTimeZone();
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const tenant = await repo.lockTenant(trx, id);
      if (!tenant) throw notFound('Tenant');
      const settings = input.settings ? mergePatch(tenant.settings, input.settings) : undefined;
      const updated = await repo.updateTenant(trx, id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
        ...(settings ? { settings } : {}),
      });
      return toTenantDto(updated);
    });
  }

  async listMembers(principal: Principal, id: string, page: { limit: number; offset: number }): Promise<MemberListDto> {
    ownTenant(principal, id);
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listMembers(trx, page));
    return { data: rows.map(toMemberDto), pagination: pageOf(total, page, rows.length) };
  }

  async addMember(user: UserPrincipal, tenantId: string, input: components['schemas']['MemberCreate']): Promise<MemberDto> {
    ownTenant(user, tenantId);
    if (input.role === 'owner' && user.role !== 'owner') throw forbidden('Only an owner can add an owner');
    const seat = input.seat ?? 'full';
    const invitation = newOpaqueToken();
    // Users are global, so finding or creating one is system work; the membership names its tenant.
    const outcome = await this.#database
      .asSystem(async (trx) => {
        const tenant = await repo.findTenant(trx, tenantId);
        if (!tenant) throw notFound('Tenant');
        const existing = await findUserByEmail(trx, input.email);
        if (existing && (await repo.findMembershipAnyStatus(trx, tenantId, existing.id))) throw conflict('That person is already a member of this tenant');
        if (seat === 'full') await this.#limits.assertSeatsAvailable(trx, tenantId, 1);
        if (existing) {
          await repo.insertMembership(trx, { tenant_id: tenantId, user_id: existing.id, role: input.role, seat, status: 'active' });
          return { tenant, userId: existing.id, email: existing.email, invited: false };
        }
        const created = await insertInvitedUser(trx, {
          id: newId('user'),
          email: input.email,
          name: input.email.split('@')[0]!.slice(0, 200) || input.email,
        });
        await repo.insertMembership(trx, { tenant_id: tenantId, user_id: created.id, role: input.role, seat, status: 'invited' });
        await insertInvitationToken(trx, { userId: created.id, tenantId, hash: invitation.hash, expiresAt: new Date(Date.now() + INVITATION_TTL_MS) });
        return { tenant, userId: created.id, email: created.email, invited: true };
      })
      .catch((err) => {
        if (isUniqueViolation(err)) throw conflict('That person is already a member of this tenant');
        throw err;
      });
    const mail = outcome.invited
      ? invitationMail(outcome.email, outcome.tenant.name, `${this.#appUrl}/accept-invitation?token=${invitation.token}`)
      : addedToTenantMail(outcome.email, outcome.tenant.name);
    this.#mailer.send(mail).catch((err) => this.#logger.error({ err, to: outcome.email }, 'member mail failed'));
    const member = await this.#database.withTenant(tenantId, (trx) => repo.findMember(trx, outcome.userId));
    return toMemberDto(member!);
  }

  async updateMember(user: UserPrincipal, tenantId: string, userId: string, input: components['schemas']['MemberUpdate']): Promise<MemberDto> {
    ownTenant(user, tenantId);
    const member = await this.#database.withTenant(tenantId, async (trx) => {
      const { target, activeOwners } = await repo.lockOwnersAndMember(trx, userId);
      if (!target) throw notFound('Member');
      const touchesOwner = target.role === 'owner' || input.role === 'owner';
      if (touchesOwner && user.role !== 'owner') throw forbidden('Only an owner can make or unmake an owner');
      if (target.role === 'owner' && target.status === 'active' && input.role !== undefined && input.role !== 'owner' && activeOwners <= 1) {
        throw conflict('A tenant keeps at least one owner: make someone else owner first');
      }
      if (input.seat === 'full' && target.seat !== 'full') await this.#limits.assertSeatsAvailable(trx, tenantId, 1);
      await repo.updateMembership(trx, userId, {
        ...(input.role !== undefined ? { role: input.role } : {}),
        ...(input.seat !== undefined ? { seat: input.seat } : {}),
      });
      return toMemberDto((await repo.findMember(trx, userId))!);
    });
    // A new role or seat counts from the next request, on every instance.
    this.#sessions.changed({ userId, tenantId });
    return member;
  }

  async removeMember(user: UserPrincipal, tenantId: string, userId: string): Promise<{ id: string; deleted: true }> {
    ownTenant(user, tenantId);
    await inTenantTransaction(this.#database, this.#bus, tenantId, async (trx, emit) => {
      const { target, activeOwners } = await repo.lockOwnersAndMember(trx, userId);
      if (!target) throw notFound('Member');
      if (target.role === 'owner' && user.role !== 'owner') throw forbidden('Only an owner can remove an owner');
      if (target.role === 'owner' && target.status === 'active' && activeOwners <= 1) {
        throw conflict('A tenant keeps at least one owner: make someone else owner first');
      }
      // Department memberships go with it (foreign key cascade); their conversations wait for someone else.
      await repo.deleteMembership(trx, userId);
      for (const conversationId of await releaseConversationsOf(trx, userId, new Date())) {
        await emit(
          'conversation.assigned',
          { conversation_id: conversationId, assigned_user_id: null, previous_assigned_user_id: userId },
          { conversationId, internal: true },
        );
      }
    });
    await this.#database.asSystem((trx) => revokeUserLogins(trx, userId, new Date(), tenantId));
    this.#sessions.changed({ userId, tenantId });
    return { id: userId, deleted: true };
  }
}

function ownTenant(principal: Principal, id: string): void {
  if (id !== principal.tenantId) throw notFound('Tenant');
}

