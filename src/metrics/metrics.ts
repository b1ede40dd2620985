import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What observeBus needs of the event bus (src/events/bus.ts): metrics sit below the features and the feed. */
export interface ObservedBus {
  subscribe(listener: (events: readonly { envelope: { type: string } }[]) => void): () => void;
}

/** What a gauge reads at scrape time: one value, or one per label set. */
export type GaugeReading = number | { labels: Record<string, string>; value: number }[];

/** The database's pool at this moment (pg.Pool counts, or PGlite's one connection). */
export interface PoolStats {
  inUse: number;
  idle: number;
  waiting: number;
}

export type AudienceKind = 'member' | 'integration' | 'visitor';

/** A work queue (webhook deliveries, workflow runs, bot deliveries) as one query reads it. */
export interface QueueReading {
  /** Items by state: due (to attempt now, in flight included), scheduled (a retry later), ... */
  states: Record<string, number>;
  /** The age of the oldest due item; 0 when none is due. */
  oldestDueSeconds: number;
}

/** What an outcome counter's owner sees: increment only. */
export type OutcomeCounter<L extends string> = Pick<Counter<L>, 'inc'>;

// Latencies of an API that mostly answers from one indexed query: fine below 100 ms, coarse above.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The service's Prometheus metrics (docs/operations.md, Metrics, says what each means). One per process:
 * service.ts makes it and hands it to the app, the gateway and anything else that reports.
 *
 * Features register their own series here: `gauge()` for a value read at scrape time (a queue's depth,
 * counted when Prometheus asks), `counter()` / `histogram()` for things that happen. Names start with
 * `chat_`; label values must come from a small fixed set (never ids, URLs or user input).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'operation' | 'status'>;
  readonly httpDuration: Histogram<'operation' | 'status'>;
  readonly eventsWritten: Counter<'type'>;
  readonly eventsDelivered: Counter<'audience'>;
  readonly deliveryLag: Histogram;

  readonly #queueCacheMs: number;

  constructor(options: { processMetrics?: boolean; queueCacheMs?: number } = {}) {
    this.#queueCacheMs = options.queueCacheMs ?? 5_000;
    // Process metrics (CPU, memory, event-loop lag, GC, handles) only where asked: the service asks;
    // the many apps a test run builds do not.
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.httpRequests = this.counter('http_requests_total', 'HTTP requests answered, by operationId (or route template) and status', ['operation', 'status']);
    this.httpDuration = this.histogram(
      'http_request_duration_seconds',
      'Time from receiving a request to the end of its answer, by operationId (or route template) and status',
      ['operation', 'status'],
      HTTP_BUCKETS,
    );
    this.eventsWritten = this.counter('chat_events_written_total', 'Events committed to the outbox by this instance, by type', ['type']);
    this.eventsDelivered = this.counter('chat_events_delivered_total', 'Event frames sent live to WebSocket connections, by audience', ['audience']);
    this.deliveryLag = this.histogram(
      'chat_event_delivery_lag_seconds',
      "Time from an event's created_at to its frames being sent to this instance's sockets",
      [],
      LAG_BUCKETS,
    );
  }

  counter<L extends string>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    const existing = this.registry.getSingleMetric(name);
    if (existing instanceof Counter) return existing as Counter<L>;
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  histogram<L extends string>(name: string, help: string, labelNames: L[] = [], buckets?: number[]): Histogram<L> {
    const existing = this.registry.getSingleMetric(name);
    if (existing instanceof Histogram) return existing as Histogram<L>;
    return new Histogram({ name, help, labelNames, registers: [this.registry], ...(buckets ? { buckets } : {}) });
  }

  /**
   * A gauge read when Prometheus scrapes: `collect` answers the value now (or one value per label set;
   * it may be async, e.g. a count query). Registering a name again replaces the earlier reader.
   */
  gauge(name: string, help: string, collect: () => GaugeReading | Promise<GaugeReading>, labelNames: string[] = []): void {
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        const reading = await collect();
        this.reset();
        if (typeof reading === 'number') this.set(reading);
        else for (const { labels, value } of reading) this.set(labels, value);
      },
    });
  }

  /** Counts events as the outbox publishes them after commit (inTenantTransaction): written, and kept. */
  observeBus(bus: ObservedBus): () => void {
    return bus.subscribe((events) => {
      for (const event of events) this.eventsWritten.inc({ type: event.envelope.type });
    });
  }

  observePool(stats: () => PoolStats): void {
    this.gauge('chat_db_pool_connections', 'Database connections of this instance, by state (in_use, idle)', () => {
      const s = stats();
      return [
        { labels: { state: 'in_use' }, value: s.inUse },
        { labels: { state: 'idle' }, value: s.idle },
      ];
    }, ['state']);
    this.gauge('chat_db_pool_waiting', 'Requests waiting for a database connection', () => stats().waiting);
  }

  /**
   * A queue's depth by state and the age of its oldest due item, both from one reading. The reading counts
   * every tenant's pending rows: it is kept for a few seconds (queueCacheMs), so scrapes close together
   * (several Prometheus servers, both gauges of one scrape) run the query once.
   */
  observeQueue(
    pending: { name: string; help: string },
    oldestDue: { name: string; help: string },
    read: () => Promise<QueueReading>,
  ): void {
    let cached: { at: number; reading: Promise<QueueReading> } | undefined;
    const current = () => {
      if (!cached || performance.now() - cached.at >= this.#queueCacheMs) {
        const reading = read();
        const entry = { at: performance.now(), reading };
        cached = entry;
        // A failed reading is not kept: the next scrape asks again.
        reading.catch(() => {
          if (cached === entry) cached = undefined;
        });
      }
      return cached.reading;
    };
    // A database that does not answer must not fail the scrape (the HTTP and process series matter most
    // then): the depth is left out and the age is NaN until a reading succeeds.
    this.gauge(pending.name, pending.help, async () => {
      const reading = await current().catch(() => undefined);
      return reading ? Object.entries(reading.states).map(([state, value]) => ({ labels: { state }, value })) : [];
    }, ['state']);
    this.gauge(oldestDue.name, oldestDue.help, async () => (await current().catch(() => undefined))?.oldestDueSeconds ?? Number.NaN);
  }

  observeSockets(count: () => Record<AudienceKind, number>): void {
    this.gauge('chat_websocket_connections', 'Open WebSocket connections on this instance, by audience', () =>
      Object.entries(count()).map(([audience, value]) => ({ labels: { audience }, value })),
    ['audience']);
  }

  /** The realtime gateway's hook: one event's frames, sent now to sockets of each audience. */
  delivered(createdAt: Date, frames: Partial<Record<AudienceKind, number>>): void {
    let sent = 0;
    for (const [audience, n] of Object.entries(frames)) {
      if (!n) continue;
      this.eventsDelivered.inc({ audience }, n);
      sent += n;
    }
    if (sent > 0) this.deliveryLag.observe(Math.max(0, Date.now() - createdAt.getTime()) / 1000);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
