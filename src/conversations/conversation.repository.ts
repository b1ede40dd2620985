import { type Kysely, sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import { allColumns, prepared, preparedShapes } from '../db/prepared.ts';
import { cappedCount } from '../db/paginate.ts';
import { queuePositionOf, waitingSinceOf } from '../db/queue.ts';
import type { BotState, ConversationStatus, ConversationsTable, DB, Priority } from '../db/schema.ts';

// Every query here runs as the request role, so row-level security keeps it inside the tenant.

/**
 * Messages from others since the reader's read mark (system notices do not count), from counters kept as
 * messages are written and read: one index lookup per row, however many messages are unread.
 */
const unreadCount = (readerId: string) => () =>
  sql<number>`conversations.message_count - coalesce((
    select rm.seen_count + rm.own_since from read_marks rm where rm.conversation_id = conversations.id and rm.reader_id = ${readerId}
  ), 0)`.as('unread_count');

/** The visitor's answer to the conversation's last satisfaction survey. */
const satisfaction = () =>
  sql<{ rating: number; comment: string | null; answered_at: string } | null>`(
    select json_build_object('rating', s.rating, 'comment', s.comment, 'answered_at', s.answered_at)
    from surveys s where s.conversation_id = conversations.id and s.status = 'answered'
    order by s.answered_at desc limit 1
  )`.as('satisfaction');

/** The labels the conversation carries, by name (src/labels/). */
const labelsOf = () =>
  sql<{ id: string; name: string; color: string }[]>`coalesce((
    select json_agg(json_build_object('id', l.id, 'name', l.name, 'color', l.color) order by lower(l.name), l.id)
    from conversation_labels cl join labels l on l.id = cl.label_id where cl.conversation_id = conversations.id
  ), '[]'::json)`.as('labels');

/**
 * Every column of conversations, by name: a prepared statement that names its columns keeps its answer's
 * shape when a migration adds one, so PostgreSQL may keep it prepared (src/db/prepared.ts).
 */
const CONVERSATION_COLUMNS = allColumns<ConversationsTable>()([
  'id',
  'tenant_id',
  'status',
  'priority',
  'subject',
  'visitor_id',
  'contact_id',
  'widget_id',
  'department_id',
  'assigned_user_id',
  'bot_state',
  'last_message',
  'last_message_at',
  'last_activity_at',
  'created_at',
  'updated_at',
  'closed_at',
  'message_count',
  'bot_id',
  'last_visitor_message_at',
  'assigned_at',
  'returned_from_user_id',
  'snoozed_until',
  'snooze_until_reply',
]);

export type ConversationRow = Awaited<ReturnType<typeof findConversation>> & {};

const findConversationStatement = prepared((db, p: { id: string; readerId: string }) =>
  db.selectFrom('conversations').select(CONVERSATION_COLUMNS).select(unreadCount(p.readerId)).select(satisfaction).select(labelsOf).where('id', '=', p.id),
);

export async function findConversation(trx: Tx, id: string, readerId: string) {
  return (await findConversationStatement(trx, { id, readerId })).rows[0];
}

// The conversation as its own answers give it: with its queue position and since when the visitor waits
// (src/db/queue.ts), in the same one statement.
const findConversationAnswerStatement = prepared((db, p: { id: string; readerId: string }) =>
  db
    .selectFrom('conversations')
    .select(CONVERSATION_COLUMNS)
    .select(unreadCount(p.readerId))
    .select(satisfaction)
    .select(labelsOf)
    .select(() => [queuePositionOf('conversations').as('queue_position'), waitingSinceOf('conversations').as('waiting_since')])
    .where('id', '=', p.id),
);

export async function findConversationAnswer(trx: Tx, id: string, readerId: string) {
  return (await findConversationAnswerStatement(trx, { id, readerId })).rows[0];
}

/** Several conversations as findConversation reads one (search results); in no particular order. */
export async function findConversations(trx: Tx, ids: string[], readerId: string): Promise<ConversationRow[]> {
  if (ids.length === 0) return [];
  return trx.selectFrom('conversations').select(CONVERSATION_COLUMNS).select(unreadCount(readerId)).select(satisfaction).select(labelsOf).where('id', 'in', ids).execute();
}

const lockConversationStatement = prepared((db, p: { id: string }) => db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where('id', '=', p.id).forUpdate());

/** Locks the conversation for the rest of the transaction: actions on one conversation run one at a time. */
export async function lockConversation(trx: Tx, id: string) {
  return (await lockConversationStatement(trx, { id })).rows[0];
}

export async function insertConversation(
  trx: Tx,
  row: {
    id: string;
    tenant_id: string;
    status: ConversationStatus;
    priority: Priority;
    subject: string | null;
    visitor_id: string | null;
    contact_id: string | null;
    department_id: string | null;
    assigned_user_id: string | null;
    widget_id?: string | null;
    /** A widget's bot takes the conversation first. */
    bot_id?: string | null;
    bot_state?: BotState;
    now: Date;
  },
) {
  const { now, ...values } = row;
  await trx
    .insertInto('conversations')
    .values({ ...values, last_activity_at: now, created_at: now, updated_at: now })
    .execute();
}

export async function updateConversation(
  trx: Tx,
  id: string,
  changes: Partial<{
    status: ConversationStatus;
    priority: Priority;
    subject: string | null;
    department_id: string | null;
    assigned_user_id: string | null;
    bot_state: BotState;
    closed_at: Date | null;
    last_message: string;
    last_message_at: Date;
    last_activity_at: Date;
    last_visitor_message_at: Date;
  }>,
  now: Date,
  /** A message others will see as unread was added: its counter goes up in the same statement. */
  options: { countMessage?: boolean } = {},
) {
  const columns = (Object.keys(changes) as (keyof typeof changes)[]).filter((c) => changes[c] !== undefined).sort();
  await updateStatements(trx, { columns, counted: !!options.countMessage }, { ...changes, updated_at: now, id });
}

// One statement per set of columns changed (a handful, each a call site's).
const updateStatements = preparedShapes((db, p: Record<string, unknown>, shape: { columns: string[]; counted: boolean }) =>
  db
    .updateTable('conversations')
    .set({
      ...(Object.fromEntries(shape.columns.map((c) => [c, p[c]])) as Record<string, never>),
      updated_at: p.updated_at as Date,
      ...(shape.counted ? { message_count: sql<number>`message_count + 1` } : {}),
    })
    .where('id', '=', p.id as string),
);

export interface ConversationFilters {
  status?: ConversationStatus;
  assignedUserId?: string | null;
  departmentId?: string;
  priority?: Priority;
  visitorId?: string;
  contactId?: string;
  q?: string;
  /** Carrying this label (src/labels/). */
  labelId?: string;
  /** true: snoozed ones only; false: leave them out. */
  snoozed?: boolean;
}

function filtered(db: Kysely<DB>, filters: Omit<ConversationFilters, 'q'> & { pattern?: string | undefined }) {
  let base = db.selectFrom('conversations');
  if (filters.status) base = base.where('status', '=', filters.status);
  if (filters.assignedUserId === null) base = base.where('assigned_user_id', 'is', null);
  else if (filters.assignedUserId) base = base.where('assigned_user_id', '=', filters.assignedUserId);
  if (filters.departmentId) base = base.where('department_id', '=', filters.departmentId);
  if (filters.priority) base = base.where('priority', '=', filters.priority);
  if (filters.visitorId) base = base.where('visitor_id', '=', filters.visitorId);
  if (filters.contactId) base = base.where('contact_id', '=', filters.contactId);
  const labelId = filters.labelId;
  if (labelId) {
    base = base.where((eb) =>
      eb.exists(eb.selectFrom('conversation_labels as cl').select('cl.label_id').whereRef('cl.conversation_id', '=', 'conversations.id').where('cl.label_id', '=', labelId)),
    );
  }
  if (filters.snoozed !== undefined) base = base.where(filters.snoozed ? SNOOZED : NOT_SNOOZED);
  const pattern = filters.pattern;
  if (pattern) base = base.where((eb) => eb.or([eb('subject', 'ilike', pattern), eb('last_message', 'ilike', pattern)]));
  return base;
}

const SNOOZED = sql<boolean>`(conversations.snoozed_until is not null or conversations.snooze_until_reply)`;
const NOT_SNOOZED = sql<boolean>`(conversations.snoozed_until is null and not conversations.snooze_until_reply)`;

/** Free text as an ILIKE pattern that matches it anywhere, its wildcards taken literally. */
const containing = (q: string | undefined) => (q ? `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined);

/**
 * One page, newest activity first, and whether more follow. With `counted` (the filters the counter rows
 * answer), each row also carries the exact total from those rows (`total_count`), read in the same
 * statement: a list page is one statement, not a page and then a count.
 */
export async function listConversations(
  trx: Tx,
  readerId: string,
  filters: ConversationFilters,
  page: { limit: number; offset: number; after?: { at: Date; id: string } },
  counted?: CountedFilters,
) {
  // The statement's shape: which filters there are (their values are parameters), and the cursor's.
  const shape: ListShape = {
    status: !!filters.status,
    assignee: filters.assignedUserId === null ? 'none' : filters.assignedUserId ? 'one' : 'any',
    department: !!filters.departmentId,
    priority: !!filters.priority,
    visitor: !!filters.visitorId,
    contact: !!filters.contactId,
    q: !!filters.q,
    label: !!filters.labelId,
    snoozed: filters.snoozed === undefined ? 'any' : filters.snoozed ? 'only' : 'none',
    counted: counted ? { status: !!counted.status, assignee: counted.assignedUserId !== undefined, department: !!counted.departmentId } : null,
    after: !!page.after,
  };
  const { rows } = await listStatements(trx, shape, {
    readerId,
    status: filters.status ?? null,
    assignee: filters.assignedUserId ?? null,
    department: filters.departmentId ?? null,
    priority: filters.priority ?? null,
    visitor: filters.visitorId ?? null,
    contact: filters.contactId ?? null,
    pattern: containing(filters.q) ?? null,
    label: filters.labelId ?? null,
    countedStatus: counted?.status ?? null,
    // The counter rows key "no one" as '' (as countersTotal does with a value of its own).
    countedAssignee: counted?.assignedUserId === undefined ? null : (counted.assignedUserId ?? ''),
    countedDepartment: counted?.departmentId ?? null,
    afterAt: page.after?.at ?? null,
    afterId: page.after?.id ?? null,
    limit: page.limit + 1,
    offset: page.after ? 0 : page.offset,
  });
  const first = rows[0] as { total_count?: number | string | null } | undefined;
  // An empty page (past the end) carries no total: the caller counts apart.
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit, total: first?.total_count == null ? undefined : Number(first.total_count) };
}

interface ListShape {
  status: boolean;
  assignee: 'none' | 'one' | 'any';
  department: boolean;
  priority: boolean;
  visitor: boolean;
  contact: boolean;
  q: boolean;
  label: boolean;
  snoozed: 'any' | 'only' | 'none';
  counted: { status: boolean; assignee: boolean; department: boolean } | null;
  after: boolean;
}

type ListParams = {
  readerId: string;
  status: ConversationStatus | null;
  assignee: string | null;
  department: string | null;
  priority: Priority | null;
  visitor: string | null;
  contact: string | null;
  pattern: string | null;
  label: string | null;
  countedStatus: ConversationStatus | null;
  countedAssignee: string | null;
  countedDepartment: string | null;
  afterAt: Date | null;
  afterId: string | null;
  limit: number;
  offset: number;
};

/**
 * One page, newest activity first, one row more than the page (whether more follow). With counted filters
 * (those the counter rows answer), each row also carries the exact total from those rows (`total_count`),
 * read in the same statement: a list page is one statement, not a page and then a count. Built once per
 * shape (listConversations); `p` holds the values.
 */
function listQuery(db: Kysely<DB>, p: ListParams, shape: ListShape) {
  const value = <T>(present: boolean, v: T | null) => (present ? (v as T) : undefined);
  let rowsQuery = filtered(db, {
    status: value(shape.status, p.status),
    assignedUserId: shape.assignee === 'none' ? null : value(shape.assignee === 'one', p.assignee),
    departmentId: value(shape.department, p.department),
    priority: value(shape.priority, p.priority),
    visitorId: value(shape.visitor, p.visitor),
    contactId: value(shape.contact, p.contact),
    pattern: value(shape.q, p.pattern),
    labelId: value(shape.label, p.label),
    snoozed: shape.snoozed === 'any' ? undefined : shape.snoozed === 'only',
  })
    .select(CONVERSATION_COLUMNS)
    .select(unreadCount(p.readerId))
    .select(satisfaction)
    .select(labelsOf);
  if (shape.counted) {
    const total = countersTotal(db, {
      status: value(shape.counted.status, p.countedStatus),
      assignedUserId: value(shape.counted.assignee, p.countedAssignee),
      departmentId: value(shape.counted.department, p.countedDepartment),
    });
    rowsQuery = rowsQuery.select(total.as('total_count')) as unknown as typeof rowsQuery;
  }
  if (shape.after) rowsQuery = rowsQuery.where(sql<boolean>`(last_activity_at, id) < (${p.afterAt}, ${p.afterId})`);
  return rowsQuery.orderBy('last_activity_at', 'desc').orderBy('id', 'desc').limit(p.limit).offset(p.offset);
}

// The everyday shapes (no filter, a status, an assignee, a department, their pages) fit in 16; the rest of
// the hundreds a client can ask for run unnamed, and leave the names to the other hot statements.
const listStatements = preparedShapes(listQuery, { names: 16 });

/** How many conversations match any filters: counted up to a cap, estimated beyond (src/db/paginate.ts). */
export async function countConversations(trx: Tx, filters: ConversationFilters) {
  const { q, ...rest } = filters;
  return cappedCount(trx, filtered(trx, { ...rest, pattern: containing(q) }).selectAll().orderBy('last_activity_at', 'desc').orderBy('id', 'desc'));
}

/** The filters the counter rows (conversation_counts) answer, in any combination. */
export type CountedFilters = Pick<ConversationFilters, 'status' | 'assignedUserId' | 'departmentId'>;

function countersTotal(db: Kysely<DB>, filters: CountedFilters) {
  let query = db.selectFrom('conversation_counts').select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), sql<number>`0`).as('total'));
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.assignedUserId !== undefined) query = query.where('assignee_key', '=', filters.assignedUserId ?? '');
  if (filters.departmentId) query = query.where('department_key', '=', filters.departmentId);
  return query;
}

/** The exact number of conversations matching the counted filters, from the counter rows kept by a trigger. */
export async function countFromCounters(trx: Tx, filters: CountedFilters): Promise<number> {
  const { total } = await countersTotal(trx, filters).executeTakeFirstOrThrow();
  return Number(total);
}

export async function departmentExists(trx: Tx, id: string): Promise<boolean> {
  return (await trx.selectFrom('departments').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/** Active full-seat members of the department, with their open conversations and last assignment. */
export async function departmentCandidates(trx: Tx, departmentId: string) {
  return trx
    .selectFrom('department_members as dm')
    .innerJoin('memberships as m', (join) => join.onRef('m.tenant_id', '=', 'dm.tenant_id').onRef('m.user_id', '=', 'dm.user_id'))
    .select(['m.user_id', 'm.last_assigned_at'])
    .select((eb) =>
      eb
        .selectFrom('conversations as c')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('c.assigned_user_id', '=', 'm.user_id')
        .where('c.status', '<>', 'closed')
        .as('open_conversations'),
    )
    .where('dm.department_id', '=', departmentId)
    .where('m.status', '=', 'active')
    .where('m.seat', '=', 'full')
    .execute();
}

/** Every active full-seat member of the team, as departmentCandidates answers them (a handoff to no department). */
export async function teamCandidates(trx: Tx, tenantId: string) {
  return trx
    .selectFrom('memberships as m')
    .select(['m.user_id', 'm.last_assigned_at'])
    .select((eb) =>
      eb
        .selectFrom('conversations as c')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('c.assigned_user_id', '=', 'm.user_id')
        .where('c.status', '<>', 'closed')
        .as('open_conversations'),
    )
    .where('m.tenant_id', '=', tenantId)
    .where('m.status', '=', 'active')
    .where('m.seat', '=', 'full')
    .execute();
}

export async function markAssigned(trx: Tx, userId: string, now: Date) {
  await trx.updateTable('memberships').set({ last_assigned_at: now }).where('user_id', '=', userId).execute();
}

/** The member's conversations that are not closed go back to open, unassigned (they left the team). */
export async function releaseConversationsOf(trx: Tx, userId: string, now: Date): Promise<string[]> {
  const rows = await trx
    .updateTable('conversations')
    .set({ status: 'open', assigned_user_id: null, updated_at: now })
    .where('assigned_user_id', '=', userId)
    .where('status', '=', 'assigned')
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

export async function insertSurvey(trx: Tx, survey: { id: string; tenant_id: string; conversation_id: string; created_at: Date }) {
  await trx.insertInto('surveys').values(survey).execute();
}

/** The visitor of a conversation (typing signals go to them), or undefined when it is not in this tenant. */
export async function findConversationVisitor(trx: Tx, id: string): Promise<{ visitor_id: string | null } | undefined> {
  return trx.selectFrom('conversations').select('visitor_id').where('id', '=', id).executeTakeFirst();
}

/** The latest survey of a conversation, as the visitor's widget shows it. */
const surveyState = () =>
  sql<{ id: string; status: 'pending' | 'answered'; rating: number | null; comment: string | null; answered_at: string | null } | null>`(
    select json_build_object('id', s.id, 'status', s.status, 'rating', s.rating, 'comment', s.comment, 'answered_at', s.answered_at)
    from surveys s where s.conversation_id = conversations.id order by s.created_at desc, s.id desc limit 1
  )`.as('survey');

export type VisitorConversationRow = NonNullable<Awaited<ReturnType<typeof findVisitorConversation>>>;

/** A conversation of this visitor, or undefined (whoever else it belongs to). */
export async function findVisitorConversation(trx: Tx, id: string, visitorId: string) {
  return trx
    .selectFrom('conversations')
    .select(['id', 'status', 'last_message', 'last_message_at', 'created_at'])
    .select(surveyState)
    .where('id', '=', id)
    .where('visitor_id', '=', visitorId)
    .executeTakeFirst();
}

export async function listVisitorConversations(trx: Tx, visitorId: string, limit: number) {
  return trx
    .selectFrom('conversations')
    .select(['id', 'status', 'last_message', 'last_message_at', 'created_at'])
    .select(surveyState)
    .where('visitor_id', '=', visitorId)
    .orderBy('last_activity_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The conversation's latest survey, locked: one answer wins. */
export async function lockLatestSurvey(trx: Tx, conversationId: string) {
  return trx
    .selectFrom('surveys')
    .selectAll()
    .where('conversation_id', '=', conversationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
}

export async function recordSurveyAnswer(trx: Tx, surveyId: string, answer: { rating: number; comment: string | null; answeredAt: Date }): Promise<void> {
  await trx
    .updateTable('surveys')
    .set({ status: 'answered', rating: answer.rating, comment: answer.comment, answered_at: answer.answeredAt })
    .where('id', '=', surveyId)
    .execute();
}
