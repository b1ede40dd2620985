import type { components } from '../../generated/api.ts';
import { conversationsById } from '../conversations/conversation.service.ts';
import type { Database } from '../db/database.ts';
import { callerIdOf } from '../shared/caller.ts';
import { invalidInput } from '../shared/errors.ts';
import { DEFAULT_PAGE_SIZE, pageOf } from '../shared/pagination.ts';
import type { Principal } from '../shared/principal.ts';
import * as repo from './search.repository.ts';

type S = components['schemas'];

export const MAX_QUERY_LENGTH = 200;

/** Words as the `simple` configuration splits them, near enough: runs of letters, marks and digits. */
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

/** The query's words, or a 400 naming `q`: over 200 characters, or nothing but stop characters. */
export function wordsOf(q: string): string[] {
  if (q.length > MAX_QUERY_LENGTH) throw invalidInput({ field: 'q', message: `must be at most ${MAX_QUERY_LENGTH} characters` });
  const words = (q.toLowerCase().match(WORD) ?? []).slice(0, 16);
  if (words.length === 0) throw invalidInput({ field: 'q', message: 'must contain a letter or a digit' });
  return words;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A headline with its matched words in <b>…</b>, everything else escaped. */
export function snippetHtml(headline: string): string {
  return escapeHtml(headline).replaceAll(repo.HIT_START, '<b>').replaceAll(repo.HIT_STOP, '</b>');
}

export class SearchService {
  readonly #database: Database;

  constructor(database: Database) {
    this.#database = database;
  }

  async conversations(principal: Principal, query: { q: string; status?: S['ConversationStatus']; label?: string; limit?: number; offset?: number }): Promise<S['ConversationSearchResults']> {
    const words = wordsOf(query.q);
    const page = { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 };
    const botId = principal.kind === 'api_key' ? principal.botId : undefined;
    const text = query.q.trim();
    const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return this.#database.withTenant(principal.tenantId, async (trx) => {
      const hits = await repo.searchConversations(trx, {
        tsquery: words.map((w) => `'${w}':*`).join(' & '),
        pattern,
        // A pattern with no run of three letters has no trigram to look up: it would read every row.
        partsPattern: words.some((w) => [...w].length >= 3) ? pattern : null,
        text: text.toLowerCase(),
        status: query.status,
        labelId: query.label,
        publicOnly: botId !== undefined,
        botId,
        ...page,
      });
      const conversations = new Map((await conversationsById(trx, hits.map((h) => h.conversation_id), callerIdOf(principal))).map((c) => [c.id, c]));
      const data = hits.flatMap((h): S['ConversationSearchResult'][] => {
        const conversation = conversations.get(h.conversation_id);
        if (!conversation) return [];
        return [
          {
            conversation,
            rank: Math.round(h.rank * 10_000) / 10_000,
            matched_in: h.sources as S['ConversationSearchResult']['matched_in'],
            message_id: h.message_id,
            snippet: h.snippet === null ? null : snippetHtml(h.snippet),
          },
        ];
      });
      return { data, pagination: pageOf(hits[0]?.total ?? 0, page, data.length) };
    });
  }
}
