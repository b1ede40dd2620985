import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Tx } from '../db/database.ts';
import type { EventBus } from '../events/bus.ts';
import type { FeedRow } from '../events/feed.repository.ts';
import { consumerDeps, FeedConsumer } from '../events/feed-consumer.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { Metrics, OutcomeCounter } from '../metrics/metrics.ts';
import { webhookDisabledMail } from '../mail/templates.ts';
import { envelopeOf } from '../events/envelope.ts';
import { newId } from '../shared/ids.ts';
import { recordFailedAttempt } from '../events/queue.repository.ts';
import * as repo from './webhook.repository.ts';
import type { RedisFeedWakeups } from '../events/wakeups.ts';
import { type PostOutcome, type Transport, createTransport, signedHeaders } from '../delivery/transport.ts';
import type { TenantInterest } from '../events/tenant-interest.ts';

export const DEFAULT_RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000];
const DAY_MS = 24 * 3_600_000;

export interface DispatcherOptions {
  database: Database;
  logger: Logger;
  /** Committed events are announced here: a fan-out pass follows at once. */
  bus: EventBus;
  mailer: Mailer;
  allowPrivate: boolean;
  /** A 2xx must arrive within this, or the attempt failed. */
  timeoutMs?: number;
  /** The delay before each retry; a failure after the last one fails the delivery for good. */
  retryDelaysMs?: number[];
  /** Attempts in flight on this instance. */
  concurrency?: number;
  /**
   * Attempts in flight to one slow endpoint (its last attempt took over SLOW_ATTEMPT_MS or got no answer):
   * an endpoint that hangs holds at most these slots, and the others go on. Fast endpoints have no cap.
   * Default: half of `concurrency`.
   */
  endpointConcurrency?: number;
  /** How often to look for unread events and due deliveries without being woken (retries, other instances). */
  pollMs?: number;
  /** How long a claimed attempt holds its delivery; past it (the instance died) another attempt starts. */
  leaseMs?: number;
  /** Nothing but failures this long disables an endpoint and mails its owners. */
  disableAfterMs?: number;
  /** Events read per fan-out transaction. */
  batch?: number;
  /** Only commits of these tenants wake the reader (src/events/tenant-interest.ts); without it, every commit does. */
  interest?: TenantInterest | undefined;
  /** Replaces the HTTP transport (the benchmark and tests count on it). */
  transport?: Transport;
  /** With several instances (Redis): commits elsewhere wake this dispatcher (this instance's are relayed by the service). */
  wakeups?: Pick<RedisFeedWakeups, 'subscribe'> | undefined;
  /** The service's registry: the queue's depth and the outcomes recorded. Without it nothing is reported. */
  metrics?: Metrics | undefined;
}

export type DeliveryOutcome = 'delivered' | 'failed_retrying' | 'failed_final';

/** Outcomes (and released claims) written per pass at most. */
const RECORD_BATCH = 500;
/**
 * How long outcomes wait for others to be written with them: recording sooner delays no delivery. Each record
 * pass is a transaction (its round trips, its commit's flush): in bench:webhooks on PostgreSQL, 50 ms instead
 * of 10 drained faster and cost the database less CPU per delivery in every alternating pair. Never more than
 * a quarter of the lease's margin.
 */
const RECORD_DELAY_MS = 50;
/** Claims are sized to last this long at the recent pace of attempts. */
const CLAIM_AHEAD_MS = 150;
/** An endpoint whose last attempt took longer than this (or the timeout's half, if less) is slow. */
const SLOW_ATTEMPT_MS = 1000;
// A quarter of a second: a pace read over a whole second trailed a backlog's first second, and the first
// second's sending with it (bench:webhooks).
const PACE_WINDOW_MS = 250;
/** Bounds of a claim, in rounds of the slots. */
const MIN_CLAIM_ROUNDS = 4;
const MAX_CLAIM_ROUNDS = 64;

interface Claim {
  delivery: repo.ClaimedDelivery;
  /** The claim's lock token: an outcome is written only while it still holds the row. */
  token: string;
  /** performance.now() before the claim was made. */
  claimedAt: number;
}

interface Outcome extends Claim {
  outcome: PostOutcome;
}

interface Mail {
  to: string[];
  delivery: repo.ClaimedDelivery;
}

interface Recorded {
  counts: Record<DeliveryOutcome, number>;
  mails: Mail[];
}

/** The dispatcher's row in feed_cursors. */
export const WEBHOOK_CURSOR = 'webhooks';

/**
 * Turns the outbox into signed HTTP deliveries, at least once, on any number of instances.
 *
 * Fan-out: a pass locks the cursor row, reads the next events through the feed repository (commit-safe
 * order: an event whose transaction commits late is below the cursor only once it is visible), inserts one
 * delivery per (enabled endpoint subscribed to its type, event) and moves the cursor, in one transaction:
 * a crash either keeps all of it or none, and the unique (endpoint, event) makes a re-read harmless.
 *
 * Sending: due deliveries are claimed with FOR UPDATE SKIP LOCKED and a lease (locked_until), attempted,
 * and their outcome recorded under the claim's token. An instance that dies mid-attempt records nothing;
 * when the lease runs out the delivery is claimed again (same webhook-id), so a crash means a retry.
 */
export class WebhookDispatcher {
  readonly #o: Required<Omit<DispatcherOptions, 'transport' | 'wakeups' | 'metrics' | 'interest'>>;
  readonly #outcomeCounter: OutcomeCounter<'outcome'> | undefined;
  readonly #transport: Transport;
  readonly #ownTransport: boolean;
  readonly #feed: FeedConsumer;
  #stopped = false;
  /** Something may be due that is not claimed yet (a wake, or the last claim took all it asked for). */
  #dueMaybe = false;
  /** Claimed, not yet attempted, oldest first. */
  readonly #queue: Claim[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  /** Per endpoint: attempts in flight, claims queued, and whether its last attempt was slow. */
  readonly #inFlightTo = new Map<string, number>();
  readonly #queuedTo = new Map<string, number>();
  readonly #slow = new Set<string>();
  /** Endpoints a claim passed over (blocked): their due deliveries are still there when they free a slot. */
  readonly #passedOver = new Set<string>();
  readonly #slowMs: number;
  /** Attempts made, not yet recorded. */
  readonly #outcomes: Outcome[] = [];
  /** Claims given back unattempted, not yet released. */
  readonly #released: Claim[] = [];
  #syncing: Promise<void> | undefined;
  #claiming: Promise<void> | undefined;
  /** Ends the wait of a pass that gathers outcomes. */
  #nudge: (() => void) | undefined;
  /** The last pass failed (the database is away): the next wake, not the pass's end, tries again. */
  #syncFailed = false;
  readonly #mailing = new Set<Promise<void>>();
  /** The pace of attempts (#pace). */
  #paceSince = performance.now();
  #paceCount = 0;
  #paceRate = 0;
  /**
   * Rounds of the slots a claim takes at least: doubled (up to MAX_CLAIM_ROUNDS) each time a claim comes
   * back to slots that ran dry waiting for it, halved (down to MIN_CLAIM_ROUNDS) otherwise. The pace reacts
   * a window late; a backlog met after a quiet spell is a burst it has not seen yet.
   */
  #claimRounds = MIN_CLAIM_ROUNDS;
  /** Time kept free at the end of a lease beyond the timeout: scheduling, recording. */
  readonly #leaseMarginMs: number;
  /** RECORD_DELAY_MS, or less when the lease leaves less room: an outcome is written while its claim holds. */
  readonly #recordDelayMs: number;

  constructor(options: DispatcherOptions) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.#o = {
      ...options,
      timeoutMs,
      retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
      concurrency: options.concurrency ?? 16,
      endpointConcurrency: options.endpointConcurrency ?? Math.max(1, Math.floor((options.concurrency ?? 16) / 2)),
      pollMs: options.pollMs ?? 1000,
      leaseMs: options.leaseMs ?? timeoutMs + Math.max(2000, timeoutMs / 2),
      disableAfterMs: options.disableAfterMs ?? 5 * DAY_MS,
      batch: options.batch ?? 500,
    };
    this.#leaseMarginMs = Math.max(0, (this.#o.leaseMs - timeoutMs) / 2);
    this.#recordDelayMs = Math.min(RECORD_DELAY_MS, this.#leaseMarginMs / 4);
    this.#slowMs = Math.min(SLOW_ATTEMPT_MS, timeoutMs / 2);
    this.#transport = options.transport ?? createTransport({ allowPrivate: options.allowPrivate, timeoutMs });
    this.#ownTransport = !options.transport;
    const { pollMs, batch } = this.#o;
    const fanOut = (trx: Tx, rows: FeedRow[]) => this.#fanOut(trx, rows);
    this.#feed = new FeedConsumer({ ...consumerDeps(options), cursor: WEBHOOK_CURSOR, label: 'webhook', pollMs, batch, fanOut, send: () => this.#wakeSender() });
    this.#outcomeCounter = options.metrics && observe(options.metrics, options.database);
  }

  /** Listens for committed events (this instance's, and others' through wakeups) and polls every pollMs. */
  start(): void {
    if (this.#stopped) return;
    this.#feed.start();
  }

  /** Reads new events and sends what is due; a pass already running runs again when it ends. */
  wake(): void {
    this.#feed.wake();
  }

  /** Stops claiming and reading; waits for the attempts in flight (each ends within the timeout) and records them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#nudge?.();
    await this.#feed.stop();
    await this.#syncing;
    // A claim pass under way ends with its claims queued (no more follow: stopped wants none).
    await this.#claiming;
    // What was claimed and not started goes back at once rather than when its lease runs out.
    this.#released.push(...this.#queue.splice(0));
    this.#queuedTo.clear();
    await Promise.allSettled([...this.#inFlight]);
    this.#syncFailed = false;
    this.#wakeSync();
    while (this.#syncing) await this.#syncing;
    await Promise.allSettled([...this.#mailing]);
    if (this.#ownTransport) this.#transport.close();
  }

  // ---- Fan-out -------------------------------------------------------------------------------------

  /** One fan-out transaction. Public for tests and the benchmark. */
  async fanOutOnce(): Promise<{ read: number; inserted: number; more: boolean; heldBack: boolean }> {
    const { queued, ...pass } = await this.#feed.readOnce();
    return { ...pass, inserted: queued };
  }

  /** One delivery per (enabled endpoint subscribed to its type, event); the unique pair makes a re-read harmless. */
  async #fanOut(trx: Tx, rows: FeedRow[]): Promise<number> {
    const endpoints = await repo.enabledWebhooksOf(trx, [...new Set(rows.map((r) => r.tenant_id))]);
    const byTenant = Map.groupBy(endpoints, (e) => e.tenant_id);
    const deliveries: repo.NewDelivery[] = [];
    for (const row of rows) {
      let body: string | undefined;
      for (const endpoint of byTenant.get(row.tenant_id) ?? []) {
        if (!subscribed(endpoint, row)) continue;
        body ??= envelopeOf(row, row.data);
        deliveries.push({
          id: newId('webhookDelivery'),
          tenant_id: row.tenant_id,
          webhook_id: endpoint.id,
          event_id: row.id,
          event_type: row.type,
          body,
        });
      }
    }
    let inserted = 0;
    for (let i = 0; i < deliveries.length; i += 1000) inserted += await repo.insertDeliveries(trx, deliveries.slice(i, i + 1000));
    return inserted;
  }

  // ---- Sending -------------------------------------------------------------------------------------
  //
  // The database is paid per pass, not per delivery, and claiming never waits for recording: two loops,
  // each one transaction at a time. A claim pass takes what fills a local queue (#wanted), so a slot that
  // frees up starts its next attempt without waiting for the database. A record pass writes every outcome
  // that arrived since the last one (group commit: passes grow with the load) and gives back unattempted
  // claims. They touch different rows: what a claim takes is unlocked, what a record writes is this
  // instance's. (One pass doing both made the queue run dry behind large records: the service sat idle
  // over a third of a backlog's drain.)

  #wakeSender(): void {
    this.#dueMaybe = true;
    this.#syncFailed = false;
    this.#nudge?.();
    this.#wakeSync();
  }

  #wakeSync(): void {
    this.#wakeClaims();
    if (this.#syncing || !this.#hasRecords()) return;
    const run = this.#recordLoop().finally(() => {
      if (this.#syncing === run) this.#syncing = undefined;
      // Work may have arrived between the loop's last look and now.
      if (!this.#syncFailed && this.#hasRecords()) this.#wakeSync();
    });
    this.#syncing = run;
  }

  #wakeClaims(): void {
    if (this.#claiming || this.#syncFailed || this.#wanted() <= 0) return;
    const run = this.#claimLoop().finally(() => {
      if (this.#claiming === run) this.#claiming = undefined;
      if (!this.#syncFailed && this.#wanted() > 0) this.#wakeClaims();
    });
    this.#claiming = run;
  }

  /**
   * How many deliveries a pass should claim now: what the attempts end at the recent pace in CLAIM_AHEAD_MS
   * (so that the queue outlasts a pass of the database), at least #claimRounds rounds of the slots (four,
   * more while they run dry) and at most sixty-four; once fewer than half of that wait. Fast receivers get large claims (4 rounds drained a
   * loopback receiver's backlog at 3,100/s, 64 rounds at 7,200/s), slow ones small claims that do not
   * sit in the queue while their leases run (their slots are full, so they never run dry: #claimRounds).
   */
  #wanted(): number {
    const c = this.#o.concurrency;
    const target = Math.min(MAX_CLAIM_ROUNDS * c, Math.max(this.#claimRounds * c, Math.ceil((this.#pace() * CLAIM_AHEAD_MS) / 1000)));
    // Claims of a slow endpoint at its cap cannot start soon: they leave room for other endpoints'.
    const startable = this.#queue.length - this.#blocked().reduce((n, id) => n + (this.#queuedTo.get(id) ?? 0), 0);
    if (this.#stopped || !this.#dueMaybe || startable >= target / 2) return 0;
    return target - this.#inFlight.size - startable;
  }

  /** Slow endpoints with all their slots in use: no attempt of theirs starts, no claim of theirs is made. */
  #blocked(): string[] {
    const blocked: string[] = [];
    for (const id of this.#slow) if ((this.#inFlightTo.get(id) ?? 0) >= this.#o.endpointConcurrency) blocked.push(id);
    return blocked;
  }

  #isBlocked(webhookId: string): boolean {
    return this.#slow.has(webhookId) && (this.#inFlightTo.get(webhookId) ?? 0) >= this.#o.endpointConcurrency;
  }

  /** Attempts ended per second, over the last PACE_WINDOW_MS or so. */
  #pace(): number {
    const now = performance.now();
    const elapsed = now - this.#paceSince;
    if (elapsed >= PACE_WINDOW_MS) {
      this.#paceRate = (this.#paceCount * 1000) / elapsed;
      this.#paceCount = 0;
      this.#paceSince = now;
    }
    return Math.max(this.#paceRate, elapsed > 0 ? (this.#paceCount * 1000) / Math.max(elapsed, 50) : 0);
  }

  #hasRecords(): boolean {
    return this.#outcomes.length > 0 || this.#released.length > 0;
  }

  /** Stopping, claims must go back, or a batch is full: no reason to wait for more outcomes. */
  #urgent(): boolean {
    return this.#stopped || this.#released.length > 0 || this.#outcomes.length >= RECORD_BATCH;
  }

  async #claimLoop(): Promise<void> {
    for (let wanted = this.#wanted(); wanted > 0; wanted = this.#wanted()) {
      // A wake during the pass sets it again.
      this.#dueMaybe = false;
      const token = randomUUID();
      // Taken before the claim: the lease began no earlier than this.
      const claimedAt = performance.now();
      let claimed: repo.ClaimedDelivery[];
      const blocked = this.#blocked();
      for (const id of blocked) this.#passedOver.add(id);
      try {
        claimed = await this.#o.database.asSystem((trx) => repo.claimDueDeliveries(trx, wanted, token, this.#o.leaseMs, blocked));
      } catch (err) {
        this.#syncFailed = true;
        this.#dueMaybe = true;
        this.#o.logger.error({ err }, 'webhook deliveries could not be claimed; the next poll tries again');
        return;
      }
      if (claimed.length === wanted) this.#dueMaybe = true;
      const starved = this.#queue.length === 0 && this.#inFlight.size < this.#o.concurrency;
      this.#claimRounds = starved && claimed.length === wanted
        ? Math.min(MAX_CLAIM_ROUNDS, this.#claimRounds * 2)
        : Math.max(MIN_CLAIM_ROUNDS, this.#claimRounds / 2);
      for (const delivery of claimed) {
        this.#queue.push({ delivery, token, claimedAt });
        bump(this.#queuedTo, delivery.webhook_id, 1);
      }
      this.#startAttempts();
    }
  }

  async #recordLoop(): Promise<void> {
    while (this.#hasRecords()) {
      // Outcomes alone wait a moment for others to share their transaction; a wake cuts the wait short.
      if (!this.#urgent()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.#recordDelayMs);
          this.#nudge = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#nudge = undefined;
      }
      const outcomes = this.#outcomes.splice(0, RECORD_BATCH);
      const released = this.#released.splice(0, RECORD_BATCH);
      let recorded: Recorded;
      try {
        recorded = await this.#o.database.asSystem((trx) => this.#record(trx, outcomes, released));
      } catch (err) {
        this.#syncFailed = true;
        this.#o.logger.error(
          { err, outcomes: outcomes.length },
          'webhook outcomes could not be recorded; the next poll tries again (unrecorded attempts are retried when their leases run out)',
        );
        return;
      }
      // Counted once committed: a pass that failed recorded nothing.
      for (const [outcome, n] of Object.entries(recorded.counts)) if (n > 0) this.#outcomeCounter?.inc({ outcome }, n);
      for (const mail of recorded.mails) {
        const sent = this.#mailOwners(mail.to, mail.delivery);
        this.#mailing.add(sent);
        void sent.finally(() => this.#mailing.delete(sent));
      }
    }
  }

  /** Fills free slots from the queue, oldest claim first, passing over slow endpoints at their cap. */
  #startAttempts(): void {
    // An attempt must end (timeout included) well within its lease, or another instance could start the
    // same delivery while this one still waits for an answer: claims too old for that go back. The queue
    // is in the order of the claims, so they are at its front.
    const latest = performance.now() - (this.#o.leaseMs - this.#o.timeoutMs - this.#leaseMarginMs);
    let released = false;
    while (this.#queue.length > 0 && (this.#stopped || this.#queue[0]!.claimedAt < latest)) {
      const claim = this.#queue.shift()!;
      bump(this.#queuedTo, claim.delivery.webhook_id, -1);
      this.#released.push(claim);
      released = true;
    }
    if (released) this.#wakeSync();
    for (let i = 0; this.#inFlight.size < this.#o.concurrency && i < this.#queue.length; ) {
      const claim = this.#queue[i]!;
      const webhookId = claim.delivery.webhook_id;
      if (this.#isBlocked(webhookId)) {
        i++;
        continue;
      }
      if (i === 0) this.#queue.shift();
      else this.#queue.splice(i, 1);
      bump(this.#queuedTo, webhookId, -1);
      bump(this.#inFlightTo, webhookId, 1);
      const attempt = this.#attempt(claim).catch((err: unknown) =>
        this.#o.logger.error({ err, delivery: claim.delivery.id }, 'a webhook attempt failed unexpectedly; its lease runs out and it is retried'),
      );
      this.#inFlight.add(attempt);
      void attempt.finally(() => {
        this.#inFlight.delete(attempt);
        bump(this.#inFlightTo, webhookId, -1);
        // A claim that came back short because it passed this endpoint over said nothing was due; its
        // deliveries were (a backlog to an endpoint that had been slow waited for the next poll).
        if (this.#passedOver.delete(webhookId)) {
          this.#dueMaybe = true;
          this.#wakeClaims();
        }
        this.#startAttempts();
      });
    }
    if (this.#urgent()) this.#nudge?.();
  }

  async #attempt(claim: Claim): Promise<void> {
    const { delivery } = claim;
    const secrets = delivery.previous_secret ? [delivery.secret, delivery.previous_secret] : [delivery.secret];
    const started = performance.now();
    const outcome = await this.#transport.post(delivery.url, signedHeaders(delivery.event_id, delivery.body, secrets), delivery.body);
    if (performance.now() - started > this.#slowMs || outcome.statusCode === null) {
      // Forgotten wholesale past a bound (endpoints deleted while slow are never answered fast again).
      if (this.#slow.size >= 10_000) this.#slow.clear();
      this.#slow.add(delivery.webhook_id);
    } else this.#slow.delete(delivery.webhook_id);
    this.#paceCount++;
    this.#outcomes.push({ ...claim, outcome });
    this.#wakeSync();
  }

  /**
   * Writes a batch of outcomes and gives back unattempted claims; answers how many of each outcome were
   * written (an outcome whose claim was lost is not) and whom to mail about endpoints it disabled.
   */
  async #record(trx: Tx, outcomes: Outcome[], released: Claim[]): Promise<Recorded> {
    const counts: Record<DeliveryOutcome, number> = { delivered: 0, failed_retrying: 0, failed_final: 0 };
    counts.delivered = await repo.recordSuccesses(
      trx,
      outcomes.filter((o) => o.outcome.error === null).map((o) => ({ id: o.delivery.id, lockToken: o.token, statusCode: o.outcome.statusCode! })),
    );
    await repo.releaseClaims(trx, released.map((c) => ({ id: c.delivery.id, lockToken: c.token })));
    const mails: Mail[] = [];
    for (const { delivery, token, outcome } of outcomes) {
      if (outcome.error === null) continue;
      const gone = outcome.statusCode === 410;
      const retryInMs = gone ? undefined : this.#o.retryDelaysMs[delivery.retry_step];
      const recorded = await recordFailedAttempt(trx, 'webhook_deliveries', delivery.id, token, { statusCode: outcome.statusCode, error: outcome.error, retryInMs });
      if (!recorded) continue;
      counts[retryInMs === undefined ? 'failed_final' : 'failed_retrying']++;
      if (gone) {
        await repo.disableWebhook(trx, delivery.webhook_id, 'gone');
        continue;
      }
      if (!(await repo.noteFailure(trx, delivery.webhook_id, this.#o.disableAfterMs))) continue;
      if (!(await repo.disableWebhook(trx, delivery.webhook_id, 'failing'))) continue;
      mails.push({ to: await repo.activeOwnerEmails(trx, delivery.tenant_id), delivery });
    }
    return { counts, mails };
  }

  async #mailOwners(to: string[], delivery: repo.ClaimedDelivery): Promise<void> {
    const days = Math.round(this.#o.disableAfterMs / DAY_MS);
    for (const address of to) {
      try {
        await this.#o.mailer.send(webhookDisabledMail(address, { id: delivery.webhook_id, url: delivery.url }, days));
      } catch (err) {
        this.#o.logger.error({ err, webhook: delivery.webhook_id }, 'could not mail an owner that a webhook was disabled');
      }
    }
  }
}

/** Registers the queue's gauges (every tenant's deliveries, read as the system role) and answers the outcome counter. */
function observe(metrics: Metrics, database: Database): OutcomeCounter<'outcome'> {
  metrics.observeQueue(
    { name: 'chat_webhook_deliveries_pending', help: 'Webhook deliveries waiting, by state: due (now, in flight included), scheduled (a retry later), held (endpoint disabled)' },
    { name: 'chat_webhook_oldest_due_seconds', help: 'How long the oldest due webhook delivery of an enabled endpoint has waited (0: none due)' },
    async () => {
      const s = await database.asSystem((trx) => repo.queueStats(trx));
      return { states: { due: s.due, scheduled: s.scheduled, held: s.held }, oldestDueSeconds: s.oldest_due_seconds };
    },
  );
  return metrics.counter('chat_webhook_deliveries_total', 'Webhook delivery attempts recorded by this instance, by outcome', ['outcome']);
}

/** Whether an endpoint gets an event: a test only its own endpoint; others by type, from its creation on. */
function subscribed(endpoint: { id: string; events: string[]; created_at: Date }, row: FeedRow): boolean {
  if (row.type === 'webhook.test') return (row.data as { webhook_id: string }).webhook_id === endpoint.id;
  if (row.created_at < endpoint.created_at) return false;
  return endpoint.events.includes('*') || endpoint.events.includes(row.type);
}

/** Adds `by` to a per-endpoint count, forgetting it at zero. */
function bump(counts: Map<string, number>, webhookId: string, by: number): void {
  const n = (counts.get(webhookId) ?? 0) + by;
  if (n > 0) counts.set(webhookId, n);
  else counts.delete(webhookId);
}
