import type { Database, Tx } from '../db/database.ts';
import type { RoutingMode } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { type Emit, inTenantTransaction, type StoredEvent } from '../events/outbox.ts';
import type { components } from '../../generated/api.ts';
import type { Job } from '../jobs/scheduler.ts';
import type { ConversationRouting } from '../conversations/conversation.service.ts';
import { appendMessage } from '../conversations/message.service.ts';
import type { PresenceStore } from '../presence/presence.ts';
import { notFound } from '../shared/errors.ts';
import type { Principal } from '../shared/principal.ts';
import { type Candidate, pick } from './pick.ts';
import * as repo from './routing.repository.ts';

type S = components['schemas'];

async function departmentRoutingOf(trx: Tx, tenantId: string, departmentId: string): Promise<S['DepartmentRouting']> {
  const department = await repo.departmentRouting(trx, departmentId);
  if (!department) throw notFound('Department');
  const tenant = await repo.tenantRouting(trx, tenantId);
  return { routing: department.routing, effective_routing: department.routing ?? tenant.routing, return_after_minutes: department.return_after_minutes };
}

/** What the visitor reads when the return timer moves their conversation (no names). */
export const RETURN_NOTICE = 'Your conversation is being passed to another agent.';
export const RETURN_TIMER_JOB = 'routing.return-timer';

/**
 * The scheduler's job (once at a time across instances): conversations whose return timer ran out go back to
 * routing; then every queue that routes is given out once more (the sweep), whatever woke routing or not.
 */
export function returnTimerJob(routing: RoutingService, intervalMs: number): Job {
  return {
    name: RETURN_TIMER_JOB,
    intervalMs,
    run: async (_database, signal) => ({ returned: await routing.returnExpired(signal), swept: await routing.sweep(signal) }),
  };
}

/** Conversations looked at per transaction while giving out the queue. */
const BATCH = 50;
/** Tenants the sweep gives out per run, at most. */
const SWEPT_TENANTS = 1000;

type QueueReason = S['QueueReason'];

/** The mode conversations of a department (or of none) are routed by: the department's own, else the tenant's. */
async function modeOf(trx: Tx, tenantId: string, departmentId: string | null, options: { lock?: boolean } = {}) {
  const tenant = await repo.tenantRouting(trx, tenantId, options);
  const department = departmentId === null ? undefined : await repo.departmentRouting(trx, departmentId, options);
  return department?.routing
    ? { mode: department.routing, last: department.round_robin_last_user_id, own: true as const }
    : { mode: tenant.routing, last: tenant.round_robin_last_user_id, own: false as const };
}

/**
 * Routing for a conversation handed to a department (or the team) by a transfer or a handoff, in that
 * change's transaction (which holds the conversation's lock). `manual` answers at once and changes nothing:
 * the caller picks as before. Otherwise it picks as a routing run does (the department's mode, online full
 * seats under capacity, round robin's position moved on) while holding the tenant's row, as every routing
 * run does, so no run on any instance gives the same agent's last place at the same time; `assignee` null:
 * nobody is available, and the conversation waits in the queue.
 */
export async function routeOne(
  trx: Tx,
  presence: PresenceStore,
  tenantId: string,
  departmentId: string | null,
): Promise<{ mode: RoutingMode; assignee: string | null }> {
  const first = await modeOf(trx, tenantId, departmentId);
  if (first.mode === 'manual') return { mode: 'manual', assignee: null };
  // Presence is read before any lock is taken; loads, after (they are what the lock protects).
  const members = await repo.candidates(trx, departmentId);
  const state = members.length === 0 ? new Map() : await presence.presenceOf(tenantId, members.map((m) => m.user_id));
  const online = members.map((m) => m.user_id).filter((id) => state.get(id) === 'online');
  const { mode, last, own } = await modeOf(trx, tenantId, departmentId, { lock: true });
  if (mode === 'manual') return { mode: 'manual', assignee: null };
  const chosen = pick(mode, await repo.candidates(trx, departmentId, { userIds: online }), last);
  if (chosen && mode === 'round_robin') {
    if (own) await repo.setDepartmentRouting(trx, departmentId!, { round_robin_last_user_id: chosen });
    else await repo.setTenantRouting(trx, tenantId, { round_robin_last_user_id: chosen });
  }
  return { mode, assignee: chosen };
}

/** conversation.assigned by routing: the event of every assignment routing makes, addressed to the agent. */
export function emitRouted(emit: Emit, conversationId: string, assignee: string, previous: string | null): Promise<string> {
  return emit(
    'conversation.assigned',
    { conversation_id: conversationId, assigned_user_id: assignee, previous_assigned_user_id: previous, by: 'routing' },
    { conversationId, internal: true, recipients: [assignee] },
  );
}

/** conversation.queued: routing found nobody for the conversation; with its position and since when the visitor waits. */
export async function emitQueued(trx: Tx, emit: Emit, conversationId: string, departmentId: string | null, reason: QueueReason): Promise<string> {
  const figures = await repo.queueFigures(trx, conversationId);
  return emit(
    'conversation.queued',
    { conversation_id: conversationId, department_id: departmentId, reason, queue_position: figures.queue_position, waiting_since: iso(figures.waiting_since) },
    { conversationId, internal: true },
  );
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

// What makes the queue worth a look: a conversation that may now wait in it, or an agent with room again.
const WAKING_EVENTS = new Set(['conversation.created', 'conversation.closed', 'conversation.reopened', 'conversation.handed_off', 'conversation.transferred']);

/**
 * The conversations an event put in the queue without routing having looked for an agent yet: routing's
 * next run announces those it cannot give out (conversation.queued). Transfers, handoffs and the return
 * timer route (or announce) in their own transaction.
 */
function arrivals(e: StoredEvent['envelope']): [string, QueueReason] | undefined {
  if (e.type === 'conversation.created') {
    const { conversation } = e.data as S['ConversationCreatedData'];
    if (conversation.status === 'open' && conversation.assigned_user_id === null && conversation.bot_state !== 'active') return [conversation.id, 'created'];
  } else if (e.type === 'conversation.reopened') {
    return [(e.data as S['ConversationReopenedData']).conversation_id, 'reopened'];
  } else if (e.type === 'conversation.assigned') {
    const data = e.data as S['ConversationAssignedData'];
    if (data.assigned_user_id === null && data.by === undefined) return [data.conversation_id, 'unassigned'];
  }
  return undefined;
}
/** An assignment wakes routing when it takes a conversation from someone (they have room) or puts one back. */
const wakes = (e: StoredEvent['envelope']) =>
  WAKING_EVENTS.has(e.type) ||
  (e.type === 'conversation.assigned' && ((e.data as { previous_assigned_user_id: string | null }).previous_assigned_user_id !== null || (e.data as { assigned_user_id: string | null }).assigned_user_id === null));

/**
 * Routing (DESIGN 17): gives queued conversations (open, unassigned, not with a bot), oldest first, to
 * available agents (active full seat, online, under capacity) by the department's mode or the tenant's.
 * Each run holds the tenant's row (FOR NO KEY UPDATE, which inserts referring to the tenant do not wait
 * for), so the runs of one tenant, on any instance, follow one another: no agent is picked by two at once,
 * the round-robin position read is the one last written, and a run that starts after a commit sees it.
 */
export class RoutingService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #presence: PresenceStore;
  /** Per tenant: the run in flight, and whether another must follow it (something happened meanwhile). */
  readonly #runs = new Map<string, { again: boolean; done: Promise<void> }>();
  /** Per tenant: conversations that came into the queue here since the last run, and why (arrivals()). */
  readonly #arrivals = new Map<string, Map<string, QueueReason>>();
  #stopped = false;
  readonly #unsubscribe: () => void;

  constructor(deps: { database: Database; bus: EventBus; presence: PresenceStore }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#presence = deps.presence;
    this.#unsubscribe = this.#bus.subscribe((events) => {
      const tenants = new Set<string>();
      for (const { envelope } of events) {
        if (!wakes(envelope)) continue;
        tenants.add(envelope.tenant_id);
        const arrival = arrivals(envelope);
        if (arrival) {
          let pending = this.#arrivals.get(envelope.tenant_id);
          if (!pending) this.#arrivals.set(envelope.tenant_id, (pending = new Map()));
          pending.set(...arrival);
        }
      }
      for (const tenantId of tenants) void this.wake(tenantId);
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe();
  }

  /** What conversations' transfers and handoffs ask of routing (ConversationRouting; app.ts passes it). */
  forConversations(): ConversationRouting {
    return {
      route: (trx, tenantId, departmentId) => routeOne(trx, this.#presence, tenantId, departmentId),
      assigned: emitRouted,
      queued: emitQueued,
    };
  }

  /** Gives out the tenant's queue soon; runs coalesce, so a burst of wake-ups costs one or two runs. Never rejects. */
  wake(tenantId: string): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const running = this.#runs.get(tenantId);
    if (running) {
      running.again = true;
      return running.done;
    }
    const state = { again: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        do {
          state.again = false;
          await this.dispatch(tenantId).catch(() => undefined);
        } while (state.again && !this.#stopped);
      } finally {
        this.#runs.delete(tenantId);
      }
    })();
    this.#runs.set(tenantId, state);
    return state.done;
  }

  // ---- Settings ---------------------------------------------------------------------------------
  // A change that may let routing give something out wakes it once committed.

  async getSettings(principal: Principal): Promise<S['RoutingSettings']> {
    const row = await this.#database.withTenant(principal.tenantId, (trx) => repo.tenantRouting(trx, principal.tenantId));
    return { routing: row.routing };
  }

  async putSettings(principal: Principal, input: S['RoutingSettings']): Promise<S['RoutingSettings']> {
    await this.#database.withTenant(principal.tenantId, (trx) => repo.setTenantRouting(trx, principal.tenantId, { routing: input.routing }));
    void this.wake(principal.tenantId);
    return { routing: input.routing };
  }

  async putCapacity(principal: Principal, userRef: string, input: S['RoutingCapacityUpdate']): Promise<S['RoutingCapacity']> {
    const userId = userRef.startsWith('usr_') ? userRef : `usr_${userRef}`;
    const updated = await this.#database.withTenant(principal.tenantId, (trx) => repo.setCapacity(trx, userId, input.capacity));
    if (!updated) throw notFound('Member');
    void this.wake(principal.tenantId);
    return { user_id: userId, capacity: input.capacity };
  }

  async getDepartment(principal: Principal, departmentId: string): Promise<S['DepartmentRouting']> {
    return this.#database.withTenant(principal.tenantId, (trx) => departmentRoutingOf(trx, principal.tenantId, departmentId));
  }

  async updateDepartment(principal: Principal, departmentId: string, input: S['DepartmentRoutingUpdate']): Promise<S['DepartmentRouting']> {
    const answer = await this.#database.withTenant(principal.tenantId, async (trx) => {
      if (!(await repo.setDepartmentRouting(trx, departmentId, input))) throw notFound('Department');
      return departmentRoutingOf(trx, principal.tenantId, departmentId);
    });
    void this.wake(principal.tenantId);
    return answer;
  }

  /**
   * The return timer: each conversation whose assignee left a visitor message unanswered past the
   * department's return_after_minutes goes back to the queue (a notice to the visitor, conversation.assigned
   * by return_timer to the team and the agent who lost it), and routing gives it to someone else. Each is
   * checked again under its lock, so a reply that just came in, or another pass, leaves it alone: it moves
   * once. Nothing is kept in memory: a pass after a restart finds what the one before did not finish.
   */
  async returnExpired(signal?: AbortSignal): Promise<number> {
    let moved = 0;
    for (;;) {
      const due = await this.#database.asSystem((trx) => repo.expiredAssignments(trx, BATCH));
      let movedNow = 0;
      for (const { id, tenant_id: tenantId } of due) {
        if (signal?.aborted) return moved;
        const done = await inTenantTransaction(this.#database, this.#bus, tenantId, async (trx, emit) => {
          const conversation = await repo.lockExpired(trx, id);
          if (!conversation) return false;
          const from = conversation.assigned_user_id!;
          const now = new Date();
          await repo.returnToQueue(trx, id, from, now);
          await appendMessage(trx, emit, { id, tenant_id: tenantId }, { sender_type: 'system', sender_id: null, type: 'system', content: RETURN_NOTICE }, now);
          await emit(
            'conversation.assigned',
            { conversation_id: id, assigned_user_id: null, previous_assigned_user_id: from, by: 'return_timer' },
            { conversationId: id, internal: true, recipients: [from] },
          );
          const { waiting_since: waitingSince } = await repo.queueFigures(trx, id);
          await emit(
            'conversation.returned',
            {
              conversation_id: id,
              previous_assigned_user_id: from,
              department_id: conversation.department_id!,
              return_after_minutes: conversation.return_after_minutes!,
              waiting_since: iso(waitingSince),
            },
            { conversationId: id, internal: true, recipients: [from] },
          );
          if ((await modeOf(trx, tenantId, conversation.department_id)).mode !== 'manual') await emitQueued(trx, emit, id, conversation.department_id, 'returned');
          return true;
        });
        if (done) movedNow++;
      }
      moved += movedNow;
      if (due.length < BATCH || movedNow === 0) return moved;
    }
  }

  /**
   * Gives out every queue that routes, of every tenant: what the wake-ups missed. A run is woken on the
   * instance where something happened, and reads presence there; while Redis does not answer in time that
   * instance sees only its own sockets (src/realtime/presence-tracker.ts), and an agent online on another
   * one waits for the next wake-up. The sweep bounds that wait by the job's interval. Answers how many
   * conversations it gave out.
   */
  async sweep(signal?: AbortSignal): Promise<number> {
    const tenants = await this.#database.asSystem((trx) => repo.tenantsWithQueue(trx, SWEPT_TENANTS));
    let given = 0;
    for (const { tenant_id: tenantId } of tenants) {
      if (signal?.aborted || this.#stopped) break;
      given += await this.dispatch(tenantId).catch(() => 0);
    }
    return given;
  }

  /** Whether someone can answer now: an active full-seat member online with room under their capacity. */
  async available(tenantId: string): Promise<boolean> {
    const members = await this.#database.withTenant(tenantId, (trx) => repo.candidates(trx, null));
    const withRoom = members.filter((m) => m.capacity === null || m.load < m.capacity);
    if (withRoom.length === 0) return false;
    const presence = await this.#presence.presenceOf(tenantId, withRoom.map((m) => m.user_id));
    return withRoom.some((m) => presence.get(m.user_id) === 'online');
  }

  /**
   * One pass over the queue; answers how many conversations it gave out. Conversations that came into the
   * queue here since the last pass (arrivals) and that it cannot give out are announced: conversation.queued.
   */
  async dispatch(tenantId: string): Promise<number> {
    const arrived = this.#arrivals.get(tenantId) ?? new Map<string, QueueReason>();
    this.#arrivals.delete(tenantId);
    try {
      return await this.#dispatch(tenantId, arrived);
    } catch (err) {
      // Announced at the next run instead (unless that one's own arrivals say otherwise).
      const pending = this.#arrivals.get(tenantId) ?? new Map<string, QueueReason>();
      for (const [id, reason] of arrived) if (!pending.has(id)) pending.set(id, reason);
      if (pending.size > 0) this.#arrivals.set(tenantId, pending);
      throw err;
    }
  }

  async #dispatch(tenantId: string, arrived: Map<string, QueueReason>): Promise<number> {
    const { inUse, members } = await this.#database.withTenant(tenantId, async (trx) =>
      (await repo.routingInUse(trx, tenantId)) ? { inUse: true, members: await repo.candidates(trx, null) } : { inUse: false, members: [] },
    );
    if (!inUse) return 0;
    const presence = members.length === 0 ? new Map() : await this.#presence.presenceOf(tenantId, members.map((m) => m.user_id));
    const online = members.map((m) => m.user_id).filter((id) => presence.get(id) === 'online');
    let total = 0;
    if (online.length > 0) {
      let after: { created_at: Date; id: string } | undefined;
      for (;;) {
        // The batch works on a copy of the arrivals, kept only once it commits: a transaction that fails (or
        // runs again after a lost connection) leaves every arrival still to be announced.
        const { given, last, left } = await inTenantTransaction(this.#database, this.#bus, tenantId, async (trx, emit) => {
          const batchArrivals = new Map(arrived);
          return { ...(await this.#giveOut(trx, emit, tenantId, online, after, batchArrivals)), left: batchArrivals };
        });
        arrived.clear();
        for (const [id, reason] of left) arrived.set(id, reason);
        total += given;
        if (!last || this.#stopped) break;
        after = last;
      }
    }
    // Arrivals the walk did not reach (nobody online, or nobody with room left): announced if still queued.
    if (arrived.size > 0 && !this.#stopped) {
      await inTenantTransaction(this.#database, this.#bus, tenantId, async (trx, emit) => {
        for (const { id, department_id: departmentId } of await repo.lockQueuedIds(trx, [...arrived.keys()])) {
          if ((await modeOf(trx, tenantId, departmentId)).mode !== 'manual') await emitQueued(trx, emit, id, departmentId, arrived.get(id)!);
        }
      });
    }
    return total;
  }

  /**
   * One batch of the queue from `after`; answers how many it gave out, and where the next batch starts (none:
   * the queue ended, or nobody online has room left). Arrivals it looks at leave `arrived`, announced when
   * they stay queued.
   */
  async #giveOut(
    trx: Tx,
    emit: Emit,
    tenantId: string,
    online: string[],
    after: { created_at: Date; id: string } | undefined,
    arrived: Map<string, QueueReason>,
  ): Promise<{ given: number; last: { created_at: Date; id: string } | undefined }> {
    const tenant = await repo.tenantRouting(trx, tenantId, { lock: true });
    const queued = await repo.lockQueued(trx, BATCH, after);
    let given = 0;
    let lastOfTenant = tenant.round_robin_last_user_id;
    const departments = new Map<string, { routing: RoutingMode | null; last: string | null } | null>();
    // The online candidates of each department (and of the tenant, ''), read once per batch and kept up to
    // date here as conversations are given: no other routing run changes them while this one holds the tenant.
    const assignments: [string, string][] = [];
    const waiting: { id: string; departmentId: string | null; reason: QueueReason }[] = [];
    const pools = new Map<string, Candidate[]>();
    const poolOf = async (departmentId: string | null) => {
      let pool = pools.get(departmentId ?? '');
      if (!pool) {
        pool = await repo.candidates(trx, departmentId, { userIds: online });
        pools.set(departmentId ?? '', pool);
      }
      return pool;
    };
    for (const conversation of queued) {
      const reason = arrived.get(conversation.id);
      arrived.delete(conversation.id);
      let mode: RoutingMode = tenant.routing;
      let last = lastOfTenant;
      let department: { routing: RoutingMode | null; last: string | null } | null = null;
      if (conversation.department_id !== null) {
        if (!departments.has(conversation.department_id)) {
          const row = await repo.departmentRouting(trx, conversation.department_id, { lock: true });
          departments.set(conversation.department_id, row ? { routing: row.routing, last: row.round_robin_last_user_id } : null);
        }
        department = departments.get(conversation.department_id) ?? null;
        if (department?.routing) {
          mode = department.routing;
          last = department.last;
        }
      }
      if (mode === 'manual') continue;
      // Whom the return timer took it from gets it back only through a person.
      const pool = await poolOf(conversation.department_id);
      const chosen = pick(mode, conversation.returned_from_user_id ? pool.filter((c) => c.user_id !== conversation.returned_from_user_id) : pool, last);
      if (!chosen) {
        if (reason) waiting.push({ id: conversation.id, departmentId: conversation.department_id, reason });
        continue;
      }
      const now = new Date();
      assignments.push([conversation.id, chosen]);
      for (const each of pools.values()) {
        const taken = each.find((c) => c.user_id === chosen);
        if (taken) {
          taken.load++;
          taken.last_assigned_at = now;
        }
      }
      if (mode === 'round_robin') {
        if (department?.routing) {
          department.last = chosen;
          await repo.setDepartmentRouting(trx, conversation.department_id!, { round_robin_last_user_id: chosen });
        } else {
          lastOfTenant = chosen;
          await repo.setTenantRouting(trx, tenantId, { round_robin_last_user_id: chosen });
        }
      }
      given++;
    }
    // The batch's picks written at once, then an event for each, in the same transaction; then the
    // arrivals nobody could take, with their positions as they stand after the picks.
    await repo.assignMany(trx, assignments, new Date());
    for (const [conversationId, chosen] of assignments) await emitRouted(emit, conversationId, chosen, null);
    for (const w of waiting) await emitQueued(trx, emit, w.id, w.departmentId, w.reason);
    // Nobody online with room left: the rest of the queue waits; no need to walk it.
    const room = (await poolOf(null)).some((c) => c.capacity === null || c.load < c.capacity);
    return { given, last: queued.length === BATCH && room ? queued.at(-1) : undefined };
  }
}
