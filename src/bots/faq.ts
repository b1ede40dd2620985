// The built-in `faq` bot's judgement, with no I/O: which canned response answers a visitor's message, or
// whether to hand off. Pure, so its rules are tested on their own (test/integration/bots.test.ts).

export interface FaqEntry {
  shortcut: string;
  title: string;
  content: string;
}

export type FaqDecision = { kind: 'answer'; entry: FaqEntry; by: 'shortcut' | 'title' | 'words' } | { kind: 'handoff'; reason: 'asked_for_person' | 'no_match' };

/** A visitor who writes one of these wants a person, whatever else the message says. */
export const PERSON_WORDS: ReadonlySet<string> = new Set(['person', 'human', 'agent', 'operator', 'representative', 'someone', 'somebody', 'staff']);

/** Share of the message's meaningful words one response must contain to answer it. */
export const WORD_OVERLAP_THRESHOLD = 0.5;

// Words that say nothing about the topic; matching on them would answer everything with anything.
const STOP_WORDS = new Set(
  'a an and are as at be can could do does for from have how i in is it me my of on or please the this to want what when where which who why will with would you your we our can\'t do not hello hi there thanks thank'.split(' '),
);

const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
const meaningful = (text: string): Set<string> => new Set(words(text).filter((w) => w.length > 1 && !STOP_WORDS.has(w)));

/**
 * In order: a request for a person hands off; a message that is exactly a shortcut (with or without a
 * leading `/`) answers with it; a message containing a response's whole title answers with it; then the
 * response sharing the largest share of the message's meaningful words, if at least the threshold.
 * Nothing: hand off.
 */
export function decideFaq(message: string, entries: readonly FaqEntry[], threshold = WORD_OVERLAP_THRESHOLD): FaqDecision {
  const all = words(message);
  if (all.some((w) => PERSON_WORDS.has(w))) return { kind: 'handoff', reason: 'asked_for_person' };
  const trimmed = message.trim().toLowerCase().replace(/^\//, '');
  const byShortcut = entries.find((e) => e.shortcut.toLowerCase() === trimmed);
  if (byShortcut) return { kind: 'answer', entry: byShortcut, by: 'shortcut' };
  const normalised = ` ${all.join(' ')} `;
  const byTitle = entries.find((e) => {
    const title = words(e.title).join(' ');
    return title.length > 0 && normalised.includes(` ${title} `);
  });
  if (byTitle) return { kind: 'answer', entry: byTitle, by: 'title' };
  const asked = meaningful(message);
  if (asked.size > 0) {
    let best: { entry: FaqEntry; score: number } | undefined;
    for (const entry of entries) {
      const known = meaningful(`${entry.title} ${entry.shortcut.replace(/[-_]/g, ' ')} ${entry.content}`);
      let shared = 0;
      for (const w of asked) if (known.has(w)) shared++;
      const score = shared / asked.size;
      if (score >= threshold && (!best || score > best.score)) best = { entry, score };
    }
    if (best) return { kind: 'answer', entry: best.entry, by: 'words' };
  }
  return { kind: 'handoff', reason: 'no_match' };
}
