import { ErrorText } from '../../../components/ErrorText.tsx';
import { LabelDot } from '../../../components/LabelChip.tsx';
import type { Conversation } from '../../../lib/cache.ts';
import { useLabels } from '../../../lib/hooks.ts';
import { useConversationActions } from '../api/queries.ts';

/** The conversation's labels as chips, each removable; the tenant's other labels to add. */
export function Labels({ conversation, readOnly }: { conversation: Conversation; readOnly: boolean }) {
  const actions = useConversationActions(conversation.id);
  const labels = useLabels();
  const carried = conversation.labels ?? [];
  const others = (labels.data?.data ?? []).filter((l) => !carried.some((c) => c.id === l.id));
  const error = actions.addLabel.error ?? actions.removeLabel.error;
  const reset = () => [actions.addLabel, actions.removeLabel].forEach((m) => m.reset());
  const path = (label_id: string) => ({ params: { path: { id: conversation.id, label_id } } });
  if (readOnly && carried.length === 0) return null;
  return (
    <div className="labels">
      {carried.length > 0 && (
        <ul className="chips" aria-label="Labels">
          {carried.map((l) => (
            <li key={l.id} className="label-chip">
              <LabelDot color={l.color} />
              {l.name}
              {!readOnly && (
                <button type="button" aria-label={`Remove label ${l.name}`} onClick={() => (reset(), actions.removeLabel.mutate(path(l.id)))}>
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {!readOnly && others.length > 0 && (
        <label className="add-label">
          <span className="visually-hidden">Add a label</span>
          <select
            value=""
            disabled={actions.addLabel.isPending}
            onChange={(e) => {
              if (!e.target.value) return;
              reset();
              actions.addLabel.mutate(path(e.target.value));
            }}
          >
            <option value="">+ Label</option>
            {others.map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <ErrorText error={error} />
    </div>
  );
}
