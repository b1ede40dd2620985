import type { Schemas } from '../lib/api.ts';

/** A label as a chip: its colour as a dot beside its name (the name carries the meaning, in the text's own colour). */
export function LabelDot({ color }: { color: string }) {
  return <span className="label-dot" style={{ background: color }} aria-hidden="true" />;
}

export function LabelChips({ labels }: { labels: Schemas['LabelRef'][] | undefined }) {
  if (!labels?.length) return null;
  return (
    <span className="label-chips">
      <span className="visually-hidden">Labels: </span>
      {labels.map((l) => (
        <span key={l.id} className="label-chip">
          <LabelDot color={l.color} />
          {l.name}
        </span>
      ))}
    </span>
  );
}
