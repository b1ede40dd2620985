import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import { newId } from '../shared/ids.ts';
import type { EventBus } from './bus.ts';
import { insertEvent, insertEventAsFeedRow, type NewEvent } from './event.repository.ts';
import { FEED_START, type FeedPosition, type FeedRow } from './feed.repository.ts';

type S = components['schemas'];

/** Each stored event type and the payload the contract gives it: a payload it does not describe does not compile. */
export interface EventPayloads {
  'conversation.created': S['ConversationCreatedData'];
  'conversation.updated': S['ConversationUpdatedData'];
  'conversation.assigned': S['ConversationAssignedData'];
  'conversation.transferred': S['ConversationTransferredData'];
  'conversation.closed': S['ConversationClosedData'];
  'conversation.reopened': S['ConversationReopenedData'];
  'conversation.handed_off': S['ConversationHandedOffData'];
  'message.created': S['MessageCreatedData'];
  'message.read': S['MessageReadData'];
  'csat.submitted': S['CsatSubmittedData'];
  'webhook.test': S['WebhookTestData'];
  'conversation.idle': S['ConversationIdleData'];
  'conversation.snoozed': S['ConversationSnoozedData'];
  'conversation.unsnoozed': S['ConversationUnsnoozedData'];
  'conversation.label_added': S['ConversationLabelData'];
  'conversation.label_removed': S['ConversationLabelData'];
  'conversation.queued': S['ConversationQueuedData'];
  'conversation.returned': S['ConversationReturnedData'];
}

/** Live signals: delivered to sockets, never stored, no id (openapi/events.asyncapi.yaml, LiveSignal). */
export interface LivePayloads {
  'presence.updated': S['PresenceUpdatedData'];
  typing: S['TypingData'];
  'visitor.online': S['VisitorPresenceData'];
  'visitor.offline': S['VisitorPresenceData'];
}

export type EventType = keyof EventPayloads;
export type LiveSignalType = keyof LivePayloads;

// Every event type of the contract is either stored or live, and nothing else: a type added to the contract
// without a payload here, or a payload for a type the contract lacks, fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type ContractEventTypesCovered = Holds<Same<EventType | LiveSignalType, S['EventType']>>;
export type StoredAndLiveDisjoint = Holds<Same<EventType & LiveSignalType, never>>;

export interface EventEnvelope<T extends EventType = EventType> {
  id: string;
  type: T;
  tenant_id: string;
  created_at: string;
  data: EventPayloads[T];
}

/** Who, beyond the tenant's members, an event is for, and what visitors may not see. */
export interface EventRouting {
  conversationId?: string;
  /** Internal notes and the like: never delivered to visitors. */
  internal?: boolean;
  /** Members addressed directly (the transfer recipient). */
  recipients?: string[];
}

export interface StoredEvent {
  envelope: EventEnvelope;
  routing: EventRouting;
}

/**
 * A committed transaction's events as the feed holds them, and the tenant's event just before them, for
 * good: no event can come between (src/events/event.repository.ts, insertEventAsFeedRow). A stream
 * standing at `after` delivers them without reading the feed.
 */
export interface FeedHandoff {
  tenantId: string;
  after: FeedPosition;
  rows: FeedRow[];
}

/** Writes an event in the transaction and answers its id. */
export type Emit = <T extends EventType>(type: T, data: EventPayloads[T], routing?: EventRouting) => Promise<string>;

/** Writes the event in the caller's transaction: it commits with the change it reports, or not at all. */
export async function writeEvent<T extends EventType>(
  trx: Tx,
  tenantId: string,
  type: T,
  data: EventPayloads[T],
  routing: EventRouting = {},
  /** How many workflow runs led to this change (src/workflows/): chains stop at a depth. */
  workflowDepth = 0,
): Promise<StoredEvent> {
  return (await writeEventOf(insertEvent, trx, tenantId, type, data, routing, workflowDepth)).stored;
}

async function writeEventOf<T extends EventType, R>(
  insert: (trx: Tx, event: NewEvent) => Promise<R>,
  trx: Tx,
  tenantId: string,
  type: T,
  data: EventPayloads[T],
  routing: EventRouting,
  workflowDepth: number,
): Promise<{ stored: StoredEvent; written: R }> {
  const createdAt = new Date();
  const id = newId('event');
  const written = await insert(trx, {
    id,
    tenant_id: tenantId,
    type,
    data,
    conversation_id: routing.conversationId ?? null,
    internal: routing.internal ?? false,
    recipients: routing.recipients ?? [],
    created_at: createdAt,
    workflow_depth: workflowDepth,
  });
  return { stored: { envelope: { id, type, tenant_id: tenantId, created_at: createdAt.toISOString(), data } as EventEnvelope, routing }, written };
}

/**
 * Tenant work that emits events: they are written in the same transaction and published on the bus
 * only after it commits. No change without its event, no event without its change.
 */
export async function inTenantTransaction<T>(
  database: Database,
  bus: EventBus,
  tenantId: string,
  fn: (trx: Tx, emit: Emit) => Promise<T>,
  /** A workflow run's change: its events carry the run's depth, so the runs they start know theirs. */
  options: { workflowDepth?: number } = {},
): Promise<T> {
  // The events handed to this instance's streams as the feed will hold them, when one of them wants this
  // tenant's and no other writer of the tenant runs here (always on PGlite, where it costs nothing: one
  // transaction runs at a time). On PostgreSQL the first event's insert also finds out whether its place in
  // the feed is final; when it is not, nothing is handed over and the streams read.
  const concurrent = database.kind !== 'pglite';
  const writing = bus.beginWrite(tenantId);
  const handing = !concurrent || writing.handoff;
  let committed: { result: T; pending: StoredEvent[]; handoff: FeedHandoff | undefined };
  try {
    committed = await database.withTenant(
      tenantId,
      async (trx) => {
        // Each run keeps its own events: one run again after a lost connection starts afresh, as the first
        // run's events were never committed.
        const pending: StoredEvent[] = [];
        let handoff: FeedHandoff | undefined = handing ? { tenantId, after: FEED_START, rows: [] } : undefined;
        const result = await fn(trx, async (type, data, routing = {}) => {
          const first = handoff?.rows.length === 0;
          const insert = (trx: Tx, event: NewEvent): Promise<Awaited<ReturnType<typeof insertEventAsFeedRow>> | void> =>
            handoff ? insertEventAsFeedRow(trx, event, { concurrent: concurrent && first }) : insertEvent(trx, event);
          const { stored, written } = await writeEventOf(insert, trx, tenantId, type, data, routing, options.workflowDepth ?? 0);
          pending.push(stored);
          if (handoff && written) {
            if (first && !written.alone) handoff = undefined;
            else {
              if (first) handoff.after = written.after;
              handoff.rows.push(written.row);
            }
          }
          return stored.envelope.id;
        });
        // An aborted transaction (a failed statement caught) would commit as a silent rollback, and handed-over
        // rows would be events that do not exist: its commit fails instead (TransactionAbortedError).
        return { result, pending, handoff };
      },
      // Its events are published after the commit: a run again after a lost connection publishes nothing twice.
      { eventWriter: true },
    );
  } finally {
    writing.end();
  }
  const { result, pending, handoff } = committed;
  bus.publish(pending, handoff);
  return result;
}
