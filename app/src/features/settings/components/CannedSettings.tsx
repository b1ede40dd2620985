import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError, TextAreaField } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction } from '../api.ts';

const CANNED = '/v1/canned-responses';

export default function CannedSettings() {
  const canned = useQuery($api.queryOptions('get', CANNED, { params: { query: { limit: 100 } } }));
  const [editing, setEditing] = useState<Schemas['CannedResponse']>();
  const create = useAction((body: Schemas['CannedResponseCreate']) => fetchClient.POST(CANNED, { body }), [CANNED]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    create.mutate({ shortcut: String(data.get('shortcut')), title: String(data.get('title')), content: String(data.get('content')) }, { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">Answers the team sends often: type / and the shortcut in the reply box.</p>
      <form onSubmit={submit} noValidate className="stack" aria-label="New canned response">
        <Field label="Shortcut" name="shortcut" required hint="Letters, digits, - and _, such as shipping." error={create.error} />
        <Field label="Title" name="title" required maxLength={200} error={create.error} />
        <TextAreaField label="Text" name="content" required rows={3} maxLength={10000} error={create.error} />
        <FormError error={create.error} fields={['shortcut', 'title', 'content']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add canned response
        </button>
      </form>
      <ul className="cards">
        {(canned.data?.data ?? []).map((c) => (
          <li key={c.id} className="card" aria-label={`/${c.shortcut}`}>
            {editing?.id === c.id ? (
              <CannedEdit canned={c} onDone={() => setEditing(undefined)} />
            ) : (
              <CannedView canned={c} onEdit={() => setEditing(c)} />
            )}
          </li>
        ))}
      </ul>
    </>
  );
}

function CannedView({ canned: c, onEdit }: { canned: Schemas['CannedResponse']; onEdit: () => void }) {
  const remove = useAction(() => fetchClient.DELETE('/v1/canned-responses/{id}', { params: { path: { id: c.id } } }), [CANNED]);
  return (
    <>
      <div className="card-head">
        <strong>/{c.shortcut}</strong> <span>{c.title}</span>
      </div>
      <p className="pre">{c.content}</p>
      <div className="buttons">
        <button type="button" onClick={onEdit}>
          Edit /{c.shortcut}
        </button>
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete /{c.shortcut}
        </button>
      </div>
      <FormError error={remove.error} fields={[]} />
    </>
  );
}

function CannedEdit({ canned: c, onDone }: { canned: Schemas['CannedResponse']; onDone: () => void }) {
  const save = useAction((body: Schemas['CannedResponseUpdate']) => fetchClient.PATCH('/v1/canned-responses/{id}', { params: { path: { id: c.id } }, body }), [CANNED], onDone);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    save.mutate({ shortcut: String(data.get('shortcut')), title: String(data.get('title')), content: String(data.get('content')) });
  };
  return (
    <form onSubmit={submit} noValidate className="stack">
      <Field label="Shortcut" name="shortcut" defaultValue={c.shortcut} required error={save.error} />
      <Field label="Title" name="title" defaultValue={c.title} required maxLength={200} error={save.error} />
      <TextAreaField label="Text" name="content" defaultValue={c.content} required rows={3} maxLength={10000} error={save.error} />
      <FormError error={save.error} fields={['shortcut', 'title', 'content']} />
      <div className="buttons">
        <button type="submit" className="primary">
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
