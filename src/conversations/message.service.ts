import { createHash } from 'node:crypto';
import { factsOnReplyWithHours } from '../reports/facts.ts';
import { endSnooze } from '../snooze/snooze.service.ts';
import type { components } from '../../generated/api.ts';
import * as conversationRepo from './conversation.repository.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Message, MessageSenderType, MessageType } from '../db/schema.ts';
import type { EventBus } from '../events/bus.ts';
import { type Emit, inTenantTransaction } from '../events/outbox.ts';
import { attachFiles, attachmentsOf } from '../files/file.service.ts';
import type { Principal } from '../shared/principal.ts';
import { callerIdOf } from '../shared/caller.ts';
import { decodeCursor, encodeCursor } from '../shared/cursor.ts';
import { AppError, notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { keysetPageOf } from '../shared/pagination.ts';
import * as repo from './message.repository.ts';
import { botInTransaction, checkBotAccess, checkBotNote, isBotKey } from '../bots/bot.service.ts';

type S = components['schemas'];

/** The message as answered; `files` resolves its attachment ids (attachmentsOf), a file deleted since is left out. */
export const toMessageDto = (m: Message, files: ReadonlyMap<string, S['Attachment']> = new Map()): S['Message'] => ({
  id: m.id,
  conversation_id: m.conversation_id,
  sender_type: m.sender_type,
  sender_id: m.sender_id,
  type: m.type,
  content: m.content,
  internal: m.internal,
  attachments: m.attachments.flatMap((id) => files.get(id) ?? []),
  created_at: m.created_at.toISOString(),
  // A bot is named to everyone, visitors included: it is not a person of the team.
  ...(m.sender_type === 'bot' && m.sender_name && m.sender_id
    ? { author: { type: 'bot' as const, id: m.sender_id, name: m.sender_name, avatar_url: m.sender_avatar_url } }
    : {}),
});

export const conversationClosed = () =>
  new AppError('ERR_CONVERSATION_CLOSED', 'The conversation is closed; reopen it first');

/**
 * Adds a message to a conversation the caller has locked: the message, the conversation's last
 * message and activity time, and message.created, all in the caller's transaction.
 */
export async function appendMessage(
  trx: Tx,
  emit: Emit,
  conversation: { id: string; tenant_id: string },
  message: {
    sender_type: MessageSenderType;
    sender_id: string | null;
    type: MessageType;
    content: string;
    internal?: boolean;
    /** Already attached (attachFiles) in this transaction. */
    attachments?: S['Attachment'][];
    /** A bot's name and avatar, shown with its message. */
    sender_name?: string;
    sender_avatar_url?: string | null;
  },
  now: Date,
): Promise<S['Message']> {
  const internal = message.internal ?? false;
  const counted = message.type !== 'system';
  const row = await repo.insertMessage(trx, {
    id: newId('message'),
    tenant_id: conversation.tenant_id,
    conversation_id: conversation.id,
    sender_type: message.sender_type,
    sender_id: message.sender_id,
    type: message.type,
    content: message.content,
    internal,
    attachments: (message.attachments ?? []).map((a) => a.id),
    created_at: now,
    sender_name: message.sender_name ?? null,
    sender_avatar_url: message.sender_avatar_url ?? null,
  }, { countForSender: counted && message.sender_id !== null });
  // Internal notes are activity, but the last message is what the visitor could see.
  await conversationRepo.updateConversation(
    trx,
    conversation.id,
    internal
      ? { last_activity_at: now }
      : {
          last_message: message.content,
          last_message_at: now,
          last_activity_at: now,
          // conversation.idle workflows count from here.
          ...(message.sender_type === 'visitor' ? { last_visitor_message_at: now } : {}),
        },
    now,
    { countMessage: counted },
  );
  const dto = toMessageDto(row, new Map((message.attachments ?? []).map((a) => [a.id, a])));
  // A visitor's message ends a snooze (src/snooze/).
  if (message.sender_type === 'visitor') await endSnooze(trx, emit, conversation.id, 'reply', now);
  await emit('message.created', { conversation_id: conversation.id, message: dto }, { conversationId: conversation.id, internal });
  // Reports' facts (src/reports/facts.ts): the insert's trigger wrote a reply's, unless business hours apply.
  if (row.reply_facts_due) await factsOnReplyWithHours(trx, conversation, message.sender_id, now);
  return dto;
}

/**
 * The conversation as its visitor saw it, oldest first: no internal notes, attachments resolved (files
 * deleted since left out). For other features' work inside their transactions (a workflow's transcript).
 */
export async function visitorTranscript(trx: Tx, conversationId: string): Promise<S['Message'][]> {
  const pages: Message[][] = [];
  let before: { at: Date; id: string } | undefined;
  for (;;) {
    const { rows, hasMore } = await repo.listMessages(trx, conversationId, { limit: 500, ...(before ? { before } : {}) }, { publicOnly: true });
    pages.push(rows);
    const last = rows.at(-1);
    if (!hasMore || !last) break;
    before = { at: last.created_at, id: last.id };
  }
  const rows = pages.flat().reverse();
  const files = await attachmentsOf(trx, rows);
  return rows.map((row) => toMessageDto(row, files));
}

export interface SendResult {
  message: S['Message'];
  replayed: boolean;
}

/** How long an Idempotency-Key replays its first answer (IDEMPOTENCY_KEY_RETENTION_HOURS); Stripe's too. */
export const DEFAULT_IDEMPOTENCY_KEY_RETENTION_MS = 24 * 3600 * 1000;

export class MessageService {
  readonly #database: Database;
  readonly #bus: EventBus;

  readonly #idempotencyKeyRetentionMs: number;

  constructor(deps: { database: Database; bus: EventBus; idempotencyKeyRetentionMs?: number | undefined }) {
    this.#database = deps.database;
    this.#bus = deps.bus;
    this.#idempotencyKeyRetentionMs = deps.idempotencyKeyRetentionMs ?? DEFAULT_IDEMPOTENCY_KEY_RETENTION_MS;
  }

  async send(principal: Principal, input: S['MessageCreate'], idempotencyKey?: string): Promise<SendResult> {
    checkBotNote(principal, input.internal);
    const callerId = callerIdOf(principal);
    const keyRow = idempotencyKey ? { tenant_id: principal.tenantId, caller_id: callerId, key: idempotencyKey } : undefined;
    return inTenantTransaction(this.#database, this.#bus, principal.tenantId, async (trx, emit) => {
      if (keyRow) {
        const requestHash = createHash('sha256').update(JSON.stringify(input)).digest();
        const earlier = await repo.claimIdempotencyKey(trx, { ...keyRow, request_hash: requestHash }, this.#idempotencyKeyRetentionMs);
        if (earlier) {
          if (!Buffer.from(earlier.request_hash).equals(requestHash)) {
            throw new AppError('ERR_IDEMPOTENCY_MISMATCH', 'This Idempotency-Key was used with a different request body');
          }
          return { message: earlier.response_body as S['Message'], replayed: true };
        }
      }
      const conversation = await conversationRepo.lockConversation(trx, input.conversation_id);
      if (!conversation) throw notFound('Conversation');
      checkBotAccess(conversation, principal, true);
      if (conversation.status === 'closed') throw conversationClosed();
      const bot = principal.kind === 'api_key' && principal.botId ? await botInTransaction(trx, principal.botId) : undefined;
      const internal = input.internal ?? false;
      const now = new Date();
      const attachments = await attachFiles(trx, conversation.id, input.attachments ?? [], { kind: 'member' }, now);
      const message = await appendMessage(
        trx,
        emit,
        conversation,
        {
          // Integrations speak as bots; the key's id says which.
          sender_type: principal.kind === 'user' ? 'user' : 'bot',
          sender_id: callerId,
          type: internal ? 'note' : 'text',
          content: input.content,
          internal,
          attachments,
          ...(bot ? { sender_name: bot.name, sender_avatar_url: bot.avatar_url } : {}),
        },
        now,
      );
      if (keyRow) await repo.storeIdempotentResponse(trx, keyRow, { status: 201, body: message });
      return { message, replayed: false };
    });
  }

  async list(principal: Principal, conversationId: string, page: { limit: number; cursor?: string }): Promise<S['MessageList']> {
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const conversation = await conversationRepo.findConversation(trx, conversationId, callerIdOf(principal));
      if (!conversation) throw notFound('Conversation');
      checkBotAccess(conversation, principal, false);
      const { rows, hasMore, total } = await repo.listMessages(trx, conversationId, { limit: page.limit, ...(before ? { before } : {}) }, { publicOnly: isBotKey(principal) });
      const files = await attachmentsOf(trx, rows);
      return {
        data: rows.map((row) => toMessageDto(row, files)),
        pagination: keysetPageOf(rows, { limit: page.limit, hasMore, total }, (last) => encodeCursor(last.created_at, last.id)),
      };
    });
  }

  async markRead(principal: Principal, conversationId: string): Promise<S['ReadResult']> {
    const readerId = callerIdOf(principal);
    return inTenantTransaction(this.#database, this.#bus, principal.tenantId, async (trx, emit) => {
      const conversation = await conversationRepo.findConversation(trx, conversationId, readerId);
      if (!conversation) throw notFound('Conversation');
      const mark = await repo.upsertReadMark(trx, {
        tenant_id: principal.tenantId,
        conversation_id: conversationId,
        reader_id: readerId,
        last_read_at: new Date(),
      });
      const after = await conversationRepo.findConversation(trx, conversationId, readerId);
      const lastReadAt = mark.last_read_at!.toISOString();
      await emit('message.read', { conversation_id: conversationId, reader_id: readerId, last_read_at: lastReadAt }, { conversationId, internal: true });
      return { conversation_id: conversationId, last_read_at: lastReadAt, unread_count: after?.unread_count ?? 0 };
    });
  }
}
