import { useState } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { type Conversation, isSnoozed } from '../../../lib/cache.ts';
import { useConversationActions } from '../api/queries.ts';

/** Tomorrow, or the next Monday, at 9:00 in the member's own time. */
function at9(daysAhead: (today: number) => number): string {
  const d = new Date();
  d.setDate(d.getDate() + daysAhead(d.getDay()));
  d.setHours(9, 0, 0, 0);
  return d.toISOString();
}

const PRESETS: { label: string; body: () => { until?: string; until_reply?: boolean } }[] = [
  { label: '1 hour', body: () => ({ until: new Date(Date.now() + 3_600_000).toISOString() }) },
  { label: 'Tomorrow 9:00', body: () => ({ until: at9(() => 1) }) },
  { label: 'Next week', body: () => ({ until: at9((day) => ((8 - day) % 7) || 7) }) },
  { label: 'Until the visitor replies', body: () => ({ until_reply: true }) },
];

/** How long it is set aside, in words. */
export function snoozeText(c: Conversation): string | undefined {
  if (!isSnoozed(c)) return undefined;
  const until = c.snoozed_until ? new Date(c.snoozed_until).toLocaleString([], { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }) : undefined;
  if (until && c.snooze_until_reply) return `Snoozed until ${until} or the visitor's reply`;
  return until ? `Snoozed until ${until}` : "Snoozed until the visitor's reply";
}

/** Snooze until…: a few presets; a snoozed conversation comes back with Unsnooze. */
export function Snooze({ conversation }: { conversation: Conversation }) {
  const actions = useConversationActions(conversation.id);
  const [choosing, setChoosing] = useState(false);
  const error = actions.snooze.error ?? actions.unsnooze.error;
  if (conversation.status === 'closed') return null;
  const reset = () => [actions.snooze, actions.unsnooze].forEach((m) => m.reset());
  return (
    <div className="snooze">
      {isSnoozed(conversation) ? (
        <button type="button" onClick={() => (reset(), actions.unsnooze.mutate(actions.path))} disabled={actions.unsnooze.isPending}>
          Unsnooze
        </button>
      ) : (
        <button type="button" aria-expanded={choosing} aria-controls="snooze-choices" onClick={() => setChoosing((c) => !c)}>
          Snooze until…
        </button>
      )}
      {choosing && !isSnoozed(conversation) && (
        <div className="buttons" id="snooze-choices" role="group" aria-label="Snooze until">
          {PRESETS.map((p) => (
            <button
              key={p.label}
              type="button"
              disabled={actions.snooze.isPending}
              onClick={() => {
                reset();
                actions.snooze.mutate({ ...actions.path, body: p.body() }, { onSuccess: () => setChoosing(false) });
              }}
            >
              {p.label}
            </button>
          ))}
        </div>
      )}
      <ErrorText error={error} />
    </div>
  );
}
