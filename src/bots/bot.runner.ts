import type { CannedResponseService } from '../canned-responses/canned-response.service.ts';
import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { Metrics, OutcomeCounter } from '../metrics/metrics.ts';
import type { FeedRow } from '../events/feed.repository.ts';
import { consumerDeps } from '../events/feed-consumer.ts';
import { FeedQueue, observeQueueDepth, type QueueConsumerOptions, type QueueSettings, queueSettings } from '../events/feed-queue.ts';
import { recordFailedAttempt } from '../events/queue.repository.ts';
import { envelopeOf } from '../events/envelope.ts';
import { AppError } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Principal } from '../shared/principal.ts';
import { type Transport, createTransport, signedHeaders } from '../delivery/transport.ts';
import * as repo from './bot.repository.ts';
import { DEFAULT_LLM_TIMEOUT_MS, llmSettingsOf } from './bot.service.ts';
import { type FaqEntry, decideFaq } from './faq.ts';
import { type ChatTurn, DEFAULT_SYSTEM_PROMPT, type LlmClient, createLlmClient } from './llm.client.ts';
import { SealedSecretError, type SecretBox } from '../shared/secret-box.ts';

/** The runner's row in feed_cursors. */
export const BOT_CURSOR = 'bots';

export const DEFAULT_BOT_RETRY_DELAYS_MS = [5_000, 30_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000];

/** Turns of the conversation the llm bot sends as context (the latest). */
const LLM_CONTEXT_MESSAGES = 50;

/**
 * What a built-in bot does in its conversation: answer, read the thread, hand off. app.ts passes the
 * conversation and message services; bots sit below conversations (which hand conversations to bots), so
 * the runner names what it needs rather than importing them.
 */
export interface BotActions {
  messages: {
    send(principal: Principal, input: components['schemas']['MessageCreate'], idempotencyKey?: string): Promise<unknown>;
    list(principal: Principal, conversationId: string, page: { limit: number }): Promise<components['schemas']['MessageList']>;
  };
  conversations: { handoff(principal: Principal, id: string, input: components['schemas']['HandoffRequest']): Promise<unknown> };
}

export interface BotRunnerOptions extends QueueConsumerOptions {
  allowPrivate: boolean;
  /** The built-in bots answer through the same services as a bot's key would. */
  services: BotActions & { cannedResponses: CannedResponseService };
  /** A webhook bot's 2xx must arrive within this. */
  timeoutMs?: number;
  retryDelaysMs?: number[];
  /** Opens an llm bot's sealed API key: a box of the key the BotService sealed it with. */
  secrets: SecretBox;
  /** Replaces the HTTP transports (tests). */
  transport?: Transport;
  llm?: LlmClient;
  /** The service's registry: the delivery queue's depth and the outcomes recorded. Without it nothing is reported. */
  metrics?: Metrics | undefined;
}

type Outcome = { statusCode: number | null; error: string | null };

/** Registers the delivery queue's gauges (every tenant's deliveries, read as the system role) and answers the outcome counter. */
function observe(metrics: Metrics, database: Database): OutcomeCounter<'outcome'> {
  observeQueueDepth(metrics, database, 'bot_deliveries', { pending: 'chat_bot_deliveries_pending', oldestDue: 'chat_bot_oldest_due_seconds', rows: 'bot deliveries', row: 'bot delivery' });
  return metrics.counter('chat_bot_deliveries_total', 'Bot delivery attempts recorded by this instance, by outcome (delivered, failed_retrying, failed_final)', ['outcome']);
}

/**
 * Gives each bot its conversations' events, at least once, on any number of instances. A FeedConsumer
 * (src/events/feed-consumer.ts) reads the feed with a cursor of its own; each pass queues one delivery per
 * (bot, event) for `conversation.created` and the visitor's `message.created` of conversations a bot
 * holds. Due deliveries are claimed (a FeedQueue) with a lease and attempted: a `webhook` bot gets a signed POST; `faq` and `llm` bots run here and answer through
 * the message and conversation services as the bot (an Idempotency-Key per event, so a retried delivery
 * never answers twice). A failure is retried on the schedule, then the delivery fails.
 */
export class BotRunner extends FeedQueue<repo.ClaimedBotDelivery> {
  readonly #o: Required<Omit<BotRunnerOptions, 'transport' | 'llm' | 'metrics' | 'interest' | 'wakeups' | 'secrets' | keyof QueueSettings>>;
  readonly #outcomeCounter: OutcomeCounter<'outcome'> | undefined;
  readonly #transport: Transport;
  readonly #llm: LlmClient;
  readonly #own: boolean[];
  readonly #secrets: SecretBox;

  constructor(options: BotRunnerOptions) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    super({
      ...consumerDeps(options),
      // Long enough for the slowest attempt: a webhook's timeout, or an llm bot's (at most 60 s).
      ...queueSettings(options, { concurrency: 8, pollMs: 1000, leaseMs: Math.max(timeoutMs, 60_000) + 5_000, batch: 500 }),
      cursor: BOT_CURSOR,
      label: 'bot',
    });
    this.#o = { ...options, timeoutMs, retryDelaysMs: options.retryDelaysMs ?? DEFAULT_BOT_RETRY_DELAYS_MS };
    this.#transport = options.transport ?? createTransport({ allowPrivate: options.allowPrivate, timeoutMs });
    this.#llm = options.llm ?? createLlmClient({ allowPrivate: options.allowPrivate });
    this.#own = [!options.transport, !options.llm];
    this.#secrets = options.secrets;
    this.#outcomeCounter = options.metrics && observe(options.metrics, options.database);
  }

  override async stop(): Promise<void> {
    await super.stop();
    if (this.#own[0]) this.#transport.close();
    if (this.#own[1]) this.#llm.close();
  }

  /** One fan-out transaction. Public for tests. */
  async fanOutOnce(): Promise<{ read: number; queued: number; more: boolean; heldBack: boolean }> {
    return this.readOnce();
  }

  /**
   * One delivery per (bot, event) for `conversation.created` and the visitor's `message.created` of
   * conversations a bot holds.
   */
  protected override claim = repo.claimDueBotDeliveries;
  protected override logContext = (delivery: repo.ClaimedBotDelivery) => ({ delivery: delivery.id });

  protected override async fanOut(trx: Tx, rows: FeedRow[]): Promise<number> {
    const relevant = rows.filter(
      (r) =>
        r.conversation_id !== null &&
        (r.type === 'conversation.created' ||
          (r.type === 'message.created' && !r.internal && (r.data as { message: { sender_type: string } }).message.sender_type === 'visitor')),
    );
    const held = new Map((await repo.conversationsHeldByBots(trx, [...new Set(relevant.map((r) => r.conversation_id!))])).map((c) => [c.id, c]));
    const deliveries: repo.NewBotDelivery[] = [];
    for (const row of relevant) {
      const conversation = held.get(row.conversation_id!);
      if (!conversation) continue;
      // The built-in bots answer messages; the conversation's start is news only to a webhook bot.
      if (conversation.kind !== 'webhook' && row.type !== 'message.created') continue;
      deliveries.push({
        id: newId('botDelivery'),
        tenant_id: row.tenant_id,
        bot_id: conversation.bot_id,
        conversation_id: row.conversation_id!,
        event_id: row.id,
        event_type: row.type,
        body: envelopeOf(row, row.data),
      });
    }
    return repo.insertBotDeliveries(trx, deliveries);
  }

  protected override async attempt(delivery: repo.ClaimedBotDelivery, token: string): Promise<void> {
    let outcome: Outcome;
    try {
      outcome =
        delivery.bot.kind === 'webhook'
          ? await this.#transport.post(delivery.bot.webhook_url!, signedHeaders(delivery.event_id, delivery.body, secretsOf(delivery.bot)), delivery.body)
          : await this.#runBuiltIn(delivery);
    } catch (err) {
      this.#o.logger.warn({ err, delivery: delivery.id, bot: delivery.bot_id }, 'a built-in bot failed; the delivery is retried');
      outcome = { statusCode: null, error: err instanceof Error ? err.message : String(err) };
    }
    const retryInMs = this.#o.retryDelaysMs[delivery.retry_step];
    const recorded = await this.#o.database.asSystem(async (trx) => {
      if (outcome.error === null) return repo.recordBotSuccess(trx, delivery.id, token, outcome.statusCode);
      return recordFailedAttempt(trx, 'bot_deliveries', delivery.id, token, { statusCode: outcome.statusCode, error: outcome.error, retryInMs });
    });
    // Counted once committed, and only while this instance still held the delivery.
    if (recorded) this.#outcomeCounter?.inc({ outcome: outcome.error === null ? 'delivered' : retryInMs === undefined ? 'failed_final' : 'failed_retrying' });
    // A retry is due later: the poll finds it.
  }

  /** The faq or llm bot's answer to one visitor message, sent as the bot. */
  async #runBuiltIn(delivery: repo.ClaimedBotDelivery): Promise<Outcome> {
    const bot = delivery.bot;
    const asBot: Principal = { kind: 'api_key', keyId: bot.id, tenantId: delivery.tenant_id, scopes: ['bot'], botId: bot.id };
    const { messages, conversations } = this.#o.services;
    const conversationId = delivery.conversation_id;
    const text = (JSON.parse(delivery.body) as { data: { message: { content: string } } }).data.message.content;
    const reply = (content: string) => messages.send(asBot, { conversation_id: conversationId, content }, `bot-reply:${delivery.event_id}`);
    const handoff = (note: string) => conversations.handoff(asBot, conversationId, { note });
    let action: Promise<unknown>;
    if (bot.kind === 'faq') {
      const decision = decideFaq(text, await this.#cannedResponses(asBot));
      action =
        decision.kind === 'answer'
          ? reply(decision.entry.content)
          : handoff(decision.reason === 'asked_for_person' ? 'The visitor asked for a person.' : 'The FAQ bot found no answer.');
    } else {
      const settings = llmSettingsOf(bot);
      const apiKey = settings && this.#openApiKey(settings.api_key, bot.id);
      if (!settings) {
        action = handoff('The LLM bot has no settings.');
      } else if (apiKey === undefined) {
        action = handoff('The LLM bot cannot read its API key.');
      } else {
        const history = (await messages.list(asBot, conversationId, { limit: LLM_CONTEXT_MESSAGES })).data.reverse();
        const turns: ChatTurn[] = [{ role: 'system', content: settings.system_prompt ?? DEFAULT_SYSTEM_PROMPT }];
        for (const m of history) {
          if (m.internal || m.type === 'system' || m.type === 'survey') continue;
          turns.push({ role: m.sender_type === 'visitor' ? 'user' : 'assistant', content: m.content });
        }
        const answer = await this.#llm.complete({ ...settings, api_key: apiKey, timeout_ms: settings.timeout_ms ?? DEFAULT_LLM_TIMEOUT_MS }, turns);
        action = answer.kind === 'reply' ? reply(answer.content) : handoff(`The LLM bot handed off: ${answer.reason}.`);
      }
    }
    try {
      await action;
    } catch (err) {
      // The conversation moved on meanwhile (handed off, closed, deleted): nothing is left to answer.
      if (err instanceof AppError && ['ERR_FORBIDDEN', 'ERR_CONFLICT', 'ERR_CONVERSATION_CLOSED', 'ERR_NOT_FOUND'].includes(err.code)) {
        return { statusCode: null, error: null };
      }
      throw err;
    }
    return { statusCode: null, error: null };
  }

  /** The key in the clear, or undefined when it was sealed under another key (SECRETS_KEY changed). */
  #openApiKey(stored: string, botId: string): string | undefined {
    try {
      return this.#secrets.open(stored);
    } catch (err) {
      if (!(err instanceof SealedSecretError)) throw err;
      this.#o.logger.error({ err, bot: botId }, 'an llm bot cannot open its API key: set it again (PATCH /v1/bots/{id}) or restore the SECRETS_KEY it was sealed with');
      return undefined;
    }
  }

  async #cannedResponses(asBot: Principal): Promise<FaqEntry[]> {
    const entries: FaqEntry[] = [];
    // Up to 1,000 responses: an FAQ larger than that wants a search index, not this loop.
    for (let offset = 0; offset < 1000; offset += 100) {
      const page = await this.#o.services.cannedResponses.list(asBot, { limit: 100, offset });
      entries.push(...page.data);
      if (!page.pagination.has_more) break;
    }
    return entries;
  }
}

/** The secrets that sign a delivery: the bot's, and the one before a rotation while its overlap lasts. */
function secretsOf(bot: { secret: string; previous_secret: string | null; previous_secret_expires_at: Date | null }): string[] {
  return bot.previous_secret && bot.previous_secret_expires_at && bot.previous_secret_expires_at.getTime() > Date.now() ? [bot.secret, bot.previous_secret] : [bot.secret];
}
