import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError } from '../../../components/Form.tsx';
import { LabelDot } from '../../../components/LabelChip.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction } from '../api.ts';

const LABELS = '/v1/labels';
// A conversation's labels change with its label: the lists and the open one are read again.
const REFRESHED = [LABELS, '/v1/conversations', '/v1/conversations/{id}'];
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

const fields = (data: FormData) => {
  const description = String(data.get('description') ?? '').trim();
  return { name: String(data.get('name') ?? '').trim(), color: String(data.get('color')), description: description || null };
};

export default function LabelsSettings() {
  const labels = useQuery($api.queryOptions('get', LABELS, { params: { query: { limit: 100 } } }));
  const [editing, setEditing] = useState<string>();
  const create = useAction((body: Schemas['LabelCreate']) => fetchClient.POST(LABELS, { body }), REFRESHED);
  const list = labels.data?.data ?? [];
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    create.mutate(fields(new FormData(form)), { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">Labels sort conversations (billing, bug, vip…): agents put them on conversations, the inbox filters by them, reports and workflows use them. At most 50.</p>
      <form onSubmit={submit} noValidate className="stack" aria-label="New label">
        <Field label="Label name" name="name" required maxLength={50} hint="No commas; unique whatever the case." error={create.error} />
        <Field label="Colour" name="color" type="color" defaultValue={PALETTE[list.length % PALETTE.length]} error={create.error} />
        <Field label="Description" name="description" maxLength={500} error={create.error} />
        <FormError error={create.error} fields={['name', 'color', 'description']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add label
        </button>
      </form>
      {labels.isSuccess && list.length === 0 && <p className="muted">No labels yet.</p>}
      <ul className="cards">
        {list.map((l) => (
          <li key={l.id} className="card" aria-label={l.name}>
            {editing === l.id ? <LabelEdit label={l} onDone={() => setEditing(undefined)} /> : <LabelView label={l} onEdit={() => setEditing(l.id)} />}
          </li>
        ))}
      </ul>
    </>
  );
}

function LabelView({ label: l, onEdit }: { label: Schemas['Label']; onEdit: () => void }) {
  const remove = useAction(() => fetchClient.DELETE('/v1/labels/{id}', { params: { path: { id: l.id } } }), REFRESHED);
  return (
    <>
      <div className="card-head">
        <span className="label-chip">
          <LabelDot color={l.color} />
          <strong>{l.name}</strong>
        </span>{' '}
        <code>{l.color}</code>
      </div>
      {l.description && <p>{l.description}</p>}
      <div className="buttons">
        <button type="button" onClick={onEdit}>
          Edit {l.name}
        </button>
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)} disabled={remove.isPending}>
          Delete {l.name}
        </button>
      </div>
      <FormError error={remove.error} fields={[]} />
    </>
  );
}

function LabelEdit({ label: l, onDone }: { label: Schemas['Label']; onDone: () => void }) {
  const save = useAction((body: Schemas['LabelUpdate']) => fetchClient.PATCH('/v1/labels/{id}', { params: { path: { id: l.id } }, body }), REFRESHED, onDone);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    save.mutate(fields(new FormData(e.currentTarget)));
  };
  return (
    <form onSubmit={submit} noValidate className="stack" aria-label={`Edit ${l.name}`}>
      <Field label="Label name" name="name" defaultValue={l.name} required maxLength={50} error={save.error} />
      <Field label="Colour" name="color" type="color" defaultValue={l.color} error={save.error} />
      <Field label="Description" name="description" defaultValue={l.description ?? ''} maxLength={500} error={save.error} />
      <FormError error={save.error} fields={['name', 'color', 'description']} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={save.isPending}>
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
