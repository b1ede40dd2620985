import { useQuery } from '@tanstack/react-query';
import { type RefObject, useEffect, useState } from 'react';
import { Link } from 'react-router';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { LabelChips } from '../../../components/LabelChip.tsx';
import { $api } from '../../../lib/api.ts';

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
/** HTML's escapes back to the characters they stand for (named ones and numeric ones, such as &#60;). */
const unescape = (text: string) =>
  text.replace(/&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|(amp|lt|gt|quot|apos));/gi, (whole, dec?: string, hex?: string, name?: string) => {
    if (name) return NAMED[name.toLowerCase()]!;
    const code = dec ? Number(dec) : Number.parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });

/**
 * The matching part of a message as the API gives it: HTML-escaped, the matched words in `<b>…</b>`.
 * Read as text, never as HTML: the markers become <mark>, everything else is unescaped into plain text.
 */
export function Snippet({ snippet }: { snippet: string }) {
  const parts = snippet.split(/<b>|<\/b>/);
  return (
    <span className="snippet">
      {parts.map((part, i) => (i % 2 === 1 ? <mark key={i}>{unescape(part)}</mark> : unescape(part)))}
    </span>
  );
}

const WHERE = { message: 'a message', contact: 'the contact', label: 'a label' } as const;

/** The search box: "/" focuses it (from anywhere but a field), Escape empties it. */
export function SearchBox({ value, onChange, inputRef }: { value: string; onChange: (q: string) => void; inputRef: RefObject<HTMLInputElement | null> }) {
  return (
    <form role="search" className="search" aria-label="Search" onSubmit={(e) => e.preventDefault()}>
      <label htmlFor="search-input" className="visually-hidden">
        Search conversations
      </label>
      <input
        id="search-input"
        ref={inputRef}
        type="search"
        value={value}
        maxLength={200}
        placeholder="Search (press /)"
        autoComplete="off"
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            onChange('');
            e.currentTarget.blur();
          }
        }}
      />
    </form>
  );
}

/** The text typed, once it has rested a moment (a request per pause, not per key). */
export function useSettled(value: string, ms = 250): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** Conversations matching the words, best first, each with where it matched and the matching part of the message. */
export function SearchResults({ q, viewId, selected, suffix }: { q: string; viewId: string; selected: string | undefined; suffix: string }) {
  const results = useQuery($api.queryOptions('get', '/v1/search/conversations', { params: { query: { q, limit: 30 } } }, { staleTime: 10_000 }));
  const found = results.data?.data ?? [];
  return (
    <div className="scroller search-results">
      <ErrorText error={results.error} />
      <p className="muted" role="status">
        {results.isPending ? 'Searching…' : `${results.data?.pagination.total ?? found.length} found for “${q}”`}
      </p>
      <ul className="results" aria-label="Search results">
        {found.map((r) => (
          <li key={r.conversation.id}>
            <Link to={`/inbox/${viewId}/${r.conversation.id}${suffix}`} aria-current={r.conversation.id === selected ? 'page' : undefined}>
              <span className="title">{r.conversation.subject ?? `Visitor ${(r.conversation.visitor_id ?? '').slice(-4)}`}</span>
              {r.snippet ? <Snippet snippet={r.snippet} /> : <span className="last">{r.conversation.last_message ?? ''}</span>}
              <span className="meta">
                <span>{r.conversation.status}</span>
                <span>in {r.matched_in.map((m) => WHERE[m]).join(', ')}</span>
                <LabelChips labels={r.conversation.labels} />
              </span>
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}
