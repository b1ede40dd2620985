import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Label } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { type Emit, inTenantTransaction } from '../events/outbox.ts';
import { conflict, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { DEFAULT_PAGE_SIZE, pageOf } from '../shared/pagination.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './label.repository.ts';

type S = components['schemas'];

/** DESIGN 18: at most this many labels per tenant. */
export const MAX_LABELS_PER_TENANT = 50;

const toDto = (l: Label): S['Label'] => ({
  id: l.id,
  name: l.name,
  color: l.color,
  description: l.description,
  created_at: l.created_at.toISOString(),
  updated_at: l.updated_at.toISOString(),
});

const nameTaken = (err: unknown): never => {
  if (isUniqueViolation(err)) throw conflict('That label name is taken');
  throw err;
};

/** How a conversation is shown to the caller after a change (the conversations feature's view, given by app.ts). */
export type ConversationView = (principal: Principal, id: string) => Promise<S['Conversation']>;

/**
 * Puts a label on a conversation or takes it off, in the caller's transaction, with its event; answers
 * whether anything changed. For members (below) and workflow actions.
 */
export async function changeConversationLabel(trx: Tx, emit: Emit, tenantId: string, conversationId: string, labelId: string, add: boolean): Promise<boolean> {
  if (!(await repo.lockConversationForLabels(trx, conversationId))) throw notFound('Conversation');
  const label = await repo.findLabel(trx, labelId);
  if (!label) throw notFound('Label');
  const changed = add
    ? await repo.addConversationLabel(trx, { tenant_id: tenantId, conversation_id: conversationId, label_id: labelId, now: new Date() })
    : await repo.removeConversationLabel(trx, conversationId, labelId);
  if (changed) {
    await emit(
      add ? 'conversation.label_added' : 'conversation.label_removed',
      { conversation_id: conversationId, label: { id: label.id, name: label.name, color: label.color } },
      { conversationId, internal: true },
    );
  }
  return changed;
}

export class LabelService {
  readonly #database: Database;
  readonly #bus: EventBus;
  readonly #view: ConversationView;

  constructor(deps: { database: Database; bus: EventBus; view: ConversationView }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#view = deps.view;
  }

  async list(principal: Principal, query: { limit?: number; offset?: number }): Promise<S['LabelList']> {
    const page = { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 };
    const { rows, total } = await this.#database.withTenant(principal.tenantId, (trx) => repo.listLabels(trx, page));
    return { data: rows.map(toDto), pagination: pageOf(total, page, rows.length) };
  }

  async create(principal: Principal, input: S['LabelCreate']): Promise<S['Label']> {
    const row = await this.#database
      .withTenant(principal.tenantId, async (trx) => {
        // The tenant's row, held: two creations at once cannot both pass the count.
        await repo.holdTenant(trx, principal.tenantId);
        if ((await repo.countLabels(trx)) >= MAX_LABELS_PER_TENANT) throw conflict(`A tenant has at most ${MAX_LABELS_PER_TENANT} labels`);
        return repo.insertLabel(trx, {
          id: newId('label'),
          tenant_id: principal.tenantId,
          name: input.name,
          color: input.color.toLowerCase(),
          description: input.description ?? null,
          now: new Date(),
        });
      })
      .catch(nameTaken);
    return toDto(row);
  }

  async update(principal: Principal, id: string, input: S['LabelUpdate']): Promise<S['Label']> {
    const changes = { ...input, ...(input.color ? { color: input.color.toLowerCase() } : {}) };
    const row = await this.#database.withTenant(principal.tenantId, (trx) => repo.updateLabel(trx, id, changes, new Date())).catch(nameTaken);
    if (!row) throw notFound('Label');
    return toDto(row);
  }

  async remove(principal: Principal, id: string): Promise<{ id: string; deleted: true }> {
    const deleted = await this.#database.withTenant(principal.tenantId, (trx) => repo.deleteLabel(trx, id));
    if (!deleted) throw notFound('Label');
    return { id, deleted: true };
  }

  async addToConversation(principal: Principal, conversationId: string, labelId: string): Promise<S['ConversationResult']> {
    await inTenantTransaction(this.#database, this.#bus, principal.tenantId, (trx, emit) => changeConversationLabel(trx, emit, principal.tenantId, conversationId, labelId, true));
    return { conversation: await this.#view(principal, conversationId) };
  }

  async removeFromConversation(principal: Principal, conversationId: string, labelId: string): Promise<{ id: string; deleted: true }> {
    await inTenantTransaction(this.#database, this.#bus, principal.tenantId, (trx, emit) => changeConversationLabel(trx, emit, principal.tenantId, conversationId, labelId, false));
    return { id: labelId, deleted: true };
  }
}
