import { openSecondsBetween } from '../../src/reports/business-time.ts';
import type { Tx } from '../../src/db/database.ts';

// The facts a history should have written, recomputed from the raw rows it left (conversations,
// messages, surveys, the events of assignments), for test/reports-properties.test.ts and
// test/faults/report-facts.test.ts. Every step of a history is one instant: rows are grouped by it.

const RealDate = Date;

export interface Fact {
  conversation_id: string;
  kind: string;
  at: number;
  department_id: string | null;
  agent_id: string | null;
  seconds: number | null;
  bh_seconds: number | null;
  value: number | null;
}

export interface Raw {
  conversations: { id: string; created_at: Date; bot_id: string | null }[];
  messages: { conversation_id: string; sender_type: string; sender_id: string | null; type: string; internal: boolean; content: string; created_at: Date }[];
  surveys: { conversation_id: string; created_at: Date; answered_at: Date | null; rating: number | null }[];
  events: { conversation_id: string | null; type: string; data: Record<string, unknown>; created_at: Date; position: number; txid: string }[];
  labels: { conversation_id: string; label_id: string }[];
}

const NOTICES = {
  transferred: 'Your conversation has been transferred to another agent.',
  closed: 'This conversation has been closed.',
  reopened: 'This conversation has been reopened.',
  handedOff: 'You are now talking with our team. Someone will be with you shortly.',
};

/** The facts a history should have written, from its raw rows alone, step by step (one instant each). */
export function recompute(raw: Raw, hours: object | null): Fact[] {
  const facts: Fact[] = [];
  const bh = (from: number, to: number) => (hours ? openSecondsBetween(hours as never, new RealDate(from), new RealDate(Math.max(from, to))) : null);
  const secs = (from: number, to: number) => Math.max(0, (to - from) / 1000);
  for (const c of raw.conversations) {
    const created = c.created_at.getTime();
    const instants = new Set<number>([created]);
    const mine = <T extends { conversation_id: string | null }>(rows: T[]) => rows.filter((r) => r.conversation_id === c.id);
    const messages = mine(raw.messages);
    const surveys = mine(raw.surveys);
    const events = mine(raw.events).sort((a, b) => a.position - b.position);
    for (const m of messages) instants.add(m.created_at.getTime());
    for (const s of surveys) {
      instants.add(s.created_at.getTime());
      if (s.answered_at) instants.add(s.answered_at.getTime());
    }
    // An event is stamped apart from the change it reports (a few milliseconds later): a transfer's or a
    // handoff's events take the instant of its notice to the visitor (the k-th event of the kind goes
    // with the k-th notice), and every event of the same transaction takes that instant too.
    const noticeTimes = (content: string) =>
      messages
        .filter((m) => m.sender_type === 'system' && m.content === content)
        .map((m) => m.created_at.getTime())
        .sort((a, b) => a - b);
    const paired: Record<string, number[]> = { 'conversation.transferred': noticeTimes(NOTICES.transferred), 'conversation.handed_off': noticeTimes(NOTICES.handedOff) };
    const txInstant = new Map<string, number>();
    for (const [type, times] of Object.entries(paired)) events.filter((e) => e.type === type).forEach((e, k) => txInstant.set(e.txid, times[k] ?? e.created_at.getTime()));
    const eventAt = (e: Raw['events'][number]) => txInstant.get(e.txid) ?? e.created_at.getTime();
    for (const e of events) instants.add(eventAt(e));
    const s = {
      opened: created,
      queued: null as number | null,
      firstAssigned: null as number | null,
      recorded: false,
      awaiting: null as number | null,
      firstVisitor: null as number | null,
      responded: false,
      assignee: null as string | null,
      department: null as string | null,
    };
    const fact = (kind: string, at: number, f: Partial<Fact> = {}) =>
      facts.push({ conversation_id: c.id, kind, at, department_id: s.department, agent_id: null, seconds: null, bh_seconds: null, value: null, ...f });
    const timed = (from: number, to: number) => ({ seconds: secs(from, to), bh_seconds: bh(from, to) });
    const queueWait = () => {
      if (s.queued === null || s.firstAssigned === null || s.recorded) return;
      fact('queue_wait', s.firstAssigned, { agent_id: s.assignee, ...timed(s.queued, s.firstAssigned) });
      s.recorded = true;
    };
    for (const t of [...instants].sort((a, b) => a - b)) {
      const at = (d: Date | null) => d !== null && d.getTime() === t;
      const here = messages.filter((m) => at(m.created_at));
      const notice = (content: string) => here.some((m) => m.sender_type === 'system' && m.content === content);
      if (t === created) {
        // A member who opens a conversation with a message has it from the start (the created event says).
        const first = events.find((e) => e.type === 'conversation.created')?.data.conversation as { assigned_user_id?: string | null; department_id?: string | null } | undefined;
        s.assignee = first?.assigned_user_id ?? null;
        s.department = first?.department_id ?? null;
        s.queued = c.bot_id || s.assignee ? null : t;
        s.firstAssigned = s.assignee ? t : null;
        fact('conversation', t);
      }
      // Assignments and departments, as the events of this step say (the last one wins).
      for (const e of events.filter((x) => eventAt(x) === t && x.type !== 'conversation.created')) {
        if ('department_id' in e.data) s.department = (e.data.department_id as string | null) ?? s.department;
        if ('assigned_user_id' in e.data) {
          const next = e.data.assigned_user_id as string | null;
          if (s.assignee === null && next !== null && s.firstAssigned === null && s.queued !== null) s.firstAssigned = t;
          s.assignee = next;
        }
      }
      if (notice(NOTICES.reopened)) {
        fact('reopen', t);
        Object.assign(s, { opened: t, queued: t, firstAssigned: null, recorded: false, assignee: null });
      }
      if (notice(NOTICES.handedOff)) {
        fact('handoff', t, { agent_id: s.assignee, ...timed(created, t) });
        Object.assign(s, { queued: s.assignee ? null : t, firstAssigned: null, recorded: false, awaiting: s.awaiting === null ? null : t });
      }
      if (notice(NOTICES.closed)) {
        fact('resolution', t, { agent_id: s.assignee, ...timed(s.opened, t) });
        if (surveys.some((x) => at(x.created_at))) fact('survey', t, { agent_id: s.assignee });
        queueWait();
        Object.assign(s, { awaiting: null, queued: null });
      }
      for (const m of here.filter((x) => x.type === 'text' && !x.internal)) {
        if (m.sender_type === 'visitor') {
          s.awaiting ??= t;
          s.firstVisitor ??= t;
        }
        if (m.sender_type !== 'user') continue;
        queueWait();
        if (!s.responded && s.firstVisitor !== null) {
          fact('first_response', t, { agent_id: m.sender_id, ...timed(s.firstVisitor, t) });
          s.responded = true;
        }
        if (s.awaiting !== null) fact('response', t, { agent_id: m.sender_id, ...timed(s.awaiting, t) });
        s.awaiting = null;
      }
      for (const a of surveys.filter((x) => at(x.answered_at))) fact('csat', t, { agent_id: s.assignee, value: a.rating });
    }
  }
  return facts;
}

/** The raw rows of a tenant, and the facts written for it. */
export async function rawRowsOf(trx: Tx): Promise<{ raw: Raw; facts: Fact[] }> {
  const conversations = await trx.selectFrom('conversations').select(['id', 'created_at', 'bot_id']).execute();
  const messages = await trx.selectFrom('messages').select(['conversation_id', 'sender_type', 'sender_id', 'type', 'internal', 'content', 'created_at']).execute();
  const surveys = await trx.selectFrom('surveys').select(['conversation_id', 'created_at', 'answered_at', 'rating']).execute();
  const events = await trx.selectFrom('events').select(['conversation_id', 'type', 'data', 'created_at', 'position', 'txid']).where('conversation_id', 'is not', null).execute();
  const labels = await trx.selectFrom('conversation_labels').select(['conversation_id', 'label_id']).execute();
  const facts = await trx.selectFrom('report_facts').select(['conversation_id', 'kind', 'at', 'department_id', 'agent_id', 'seconds', 'bh_seconds', 'value']).execute();
  return {
    raw: { conversations, messages, surveys, events: events.map((e) => ({ ...e, position: Number(e.position) })), labels },
    facts: facts.map((f) => ({ ...f, at: f.at.getTime() })),
  };
}

/** Facts in one order, to compare as multisets. */
export const sortFacts = (facts: Fact[]) => [...facts].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
