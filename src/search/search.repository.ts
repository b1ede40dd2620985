import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';

// Search (DESIGN 18): full text with the `simple` configuration over expression indexes (messages, and the
// contact's name, e-mail and custom attributes), trigrams for parts of words, label names. Runs as the
// request role: row-level security keeps it inside the tenant whatever the query says.
//
// Messages and contacts come from search_newest_messages() and search_newest_contacts() (migrations
// 2026-12-04T09-00-00, 2026-12-05T09-00-00): under row-level security the full-text and trigram indexes do not apply (their
// operators are not leakproof), so they find the rows of the transaction's tenant with its owner's rights.
// Each kind of match is bounded to its newest SEARCH_CANDIDATES (issue 44: a search under 300 ms p99): a common
// word, or the first letters of many words, matches a large share of a large tenant's messages, and
// ranking them all read each one. Parts of words (trigrams) are searched in messages only when no message
// has the words or words they begin: an order number, or any word in the text, is found through the
// full-text index alone, as a trigram search for it reads most of a large tenant's messages.

/** How many matches of each kind (messages, contacts, conversations of a label) a search ranks at most. */
export const SEARCH_CANDIDATES = 200;
/** How many of the newest messages and contacts are read first, newest first, for words most of them hold. */
export const SEARCH_NEWEST_READ = 20 * SEARCH_CANDIDATES;
/**
 * How many of the newest rows are read at most when the first read shows that reading further finds
 * enough. Past it the words are rare enough (under about one row in a hundred) that the full-text
 * index's list of the rows holding them costs less than reading rows until enough match.
 */
export const SEARCH_NEWEST_READ_AT_MOST = 10 * SEARCH_NEWEST_READ;

/** The contact's searchable text: exactly the expression of contacts_fts_idx and contacts_trgm_idx. */
const contactDocument = sql`(coalesce(k.name, '') || ' ' || coalesce(k.email, '') || ' ' || coalesce(k.custom_attributes::text, ''))`;

/** Markers around matched words in a headline: never in text (NUL-free C0 controls), escaped apart from it. */
export const HIT_START = '\u0001';
export const HIT_STOP = '\u0002';

export interface SearchHit {
  conversation_id: string;
  rank: number;
  sources: string[];
  message_id: string | null;
  snippet: string | null;
  total: number;
}

export async function searchConversations(
  trx: Tx,
  input: {
    /** A prefix tsquery in to_tsquery syntax ('word':* & ...), built from letters and digits only. */
    tsquery: string;
    /** An ILIKE pattern of the whole query (its wildcards escaped), for label names. */
    pattern: string;
    /** The same for messages and contacts, by their trigram indexes; null when it has no trigram. */
    partsPattern: string | null;
    /** The query's words, lower case, for label names. */
    text: string;
    status?: string | undefined;
    labelId?: string | undefined;
    /** A bot's key: no internal notes, and only the bot's own conversations. */
    publicOnly: boolean;
    botId?: string | undefined;
    limit: number;
    offset: number;
  },
): Promise<SearchHit[]> {
  const statusFilter = input.status ? sql`and c.status = ${input.status}` : sql``;
  const labelFilter = input.labelId
    ? sql`and exists (select 1 from conversation_labels fl where fl.conversation_id = c.id and fl.label_id = ${input.labelId})`
    : sql``;
  const botFilter = input.botId ? sql`and c.bot_id = ${input.botId}` : sql``;
  const result = await sql<SearchHit>`
    with q as (select to_tsquery('simple', ${input.tsquery}) as tsq),
    message_hits as (
      select distinct on (m.conversation_id) m.conversation_id, m.id as message_id, m.content,
        ts_rank(to_tsvector('simple', m.content), q.tsq) + case when m.content ilike ${input.pattern} then 0.05 else 0 end as rank
      from q, search_newest_messages(q.tsq, ${input.partsPattern}::text, ${input.publicOnly}::boolean, ${SEARCH_CANDIDATES}::int, ${SEARCH_NEWEST_READ}::int, ${SEARCH_NEWEST_READ_AT_MOST}::int) m
      order by m.conversation_id, rank desc, m.created_at desc, m.id desc
    ),
    contact_hits as (
      select c.id as conversation_id, ts_rank(to_tsvector('simple', ${contactDocument}), q.tsq) + 0.05 as rank
      from q, search_newest_contacts(q.tsq, ${input.partsPattern}::text, ${SEARCH_CANDIDATES}::int, ${SEARCH_NEWEST_READ}::int, ${SEARCH_NEWEST_READ_AT_MOST}::int) k join conversations c on c.contact_id = k.id
    ),
    label_hits as (
      select h.conversation_id, h.rank from labels l
      cross join lateral (
        -- Conversation ids are UUIDv7: the newest conversations of the label first, along its index.
        select cl.conversation_id, 0.1 + case when lower(l.name) = ${input.text} then 0.1 else 0 end as rank
        from conversation_labels cl where cl.label_id = l.id
        order by cl.conversation_id desc limit ${SEARCH_CANDIDATES}
      ) as h
      where lower(l.name) = ${input.text} or l.name ilike ${input.pattern}
    ),
    hits as (
      select conversation_id, rank, 'message' as source from message_hits
      union all select conversation_id, rank, 'contact' from contact_hits
      union all select conversation_id, rank, 'label' from label_hits
    ),
    ranked as (
      select h.conversation_id, sum(h.rank)::float8 as rank, array_agg(distinct h.source order by h.source) as sources,
        count(*) over () as total, max(c.last_activity_at) as last_activity_at
      from hits h join conversations c on c.id = h.conversation_id
      where true ${statusFilter} ${labelFilter} ${botFilter}
      group by h.conversation_id
      order by rank desc, last_activity_at desc, h.conversation_id desc
      limit ${input.limit} offset ${input.offset}
    )
    select r.conversation_id, r.rank, r.sources, r.total::int as total, mh.message_id,
      case when mh.content is null then null else ts_headline('simple', mh.content, q.tsq,
        ${`StartSel=${HIT_START}, StopSel=${HIT_STOP}, MaxWords=24, MinWords=8, MaxFragments=1`}) end as snippet
    from ranked r cross join q left join message_hits mh on mh.conversation_id = r.conversation_id
    order by r.rank desc, r.last_activity_at desc, r.conversation_id desc
  `.execute(trx);
  return result.rows.map((r) => ({ ...r, rank: Number(r.rank), total: Number(r.total) }));
}
