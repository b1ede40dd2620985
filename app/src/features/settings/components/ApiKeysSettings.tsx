import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, fieldErrors, FormError, ShownOnce } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, when } from '../api.ts';

type Scope = Schemas['ApiKeyScope'];
const KEYS = '/v1/api-keys';
export const SCOPES: Scope[] = [
  'tenant:read',
  'tenant:write',
  'team:read',
  'conversations:read',
  'conversations:write',
  'messages:read',
  'messages:write',
  'visitors:read',
  'contacts:read',
  'contacts:write',
  'widgets:read',
  'widgets:write',
  'canned_responses:read',
  'canned_responses:write',
  'files:read',
  'files:write',
  'billing:read',
  'webhooks:read',
  'webhooks:write',
  'workflows:read',
  'workflows:write',
];

export default function ApiKeysSettings() {
  const keys = useQuery($api.queryOptions('get', KEYS, { params: { query: { limit: 100 } } }));
  const [shown, setShown] = useState<{ name: string; key: string }>();
  const create = useAction((body: Schemas['ApiKeyCreate']) => fetchClient.POST(KEYS, { body }), [KEYS], (k) => setShown({ name: k.name, key: k.key }));
  const rotate = useAction((id: string) => fetchClient.POST('/v1/api-keys/{id}/rotate', { params: { path: { id } } }), [KEYS], (k) => setShown({ name: k.name, key: k.key }));
  const revoke = useAction((id: string) => fetchClient.DELETE('/v1/api-keys/{id}', { params: { path: { id } } }), [KEYS]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    create.mutate({ name: String(data.get('name')), scopes: data.getAll('scopes').map(String) as Scope[] }, { onSuccess: () => form.reset() });
  };
  const scopeError = fieldErrors(create.error).get('scopes');
  return (
    <>
      <p className="muted">Keys let your own servers call the API. Each key may do only what its scopes allow.</p>
      {shown && <ShownOnce label={`New key for ${shown.name}.`} value={shown.key} onDone={() => setShown(undefined)} />}
      <form onSubmit={submit} noValidate className="stack" aria-label="New API key">
        <Field label="Key name" name="name" required maxLength={100} hint="What the key is for, such as CRM sync." error={create.error} />
        <fieldset aria-describedby={scopeError ? 'scopes-error' : undefined}>
          <legend>Scopes</legend>
          <div className="scope-grid">
            {SCOPES.map((s) => (
              <label key={s} className="check">
                <input type="checkbox" name="scopes" value={s} /> {s}
              </label>
            ))}
          </div>
          {scopeError && (
            <p className="error field-error" id="scopes-error" role="alert">
              {scopeError}
            </p>
          )}
        </fieldset>
        <FormError error={create.error} fields={['name', 'scopes']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Create key
        </button>
      </form>
      <FormError error={rotate.error ?? revoke.error} fields={[]} />
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Scopes</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(keys.data?.data ?? []).map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>{k.scopes.join(', ')}</td>
              <td>{when(k.last_used_at)}</td>
              <td className="buttons">
                <button type="button" onClick={() => rotate.mutate(k.id)}>
                  Rotate {k.name}
                </button>
                <button type="button" className="danger" onClick={() => revoke.mutate(k.id)}>
                  Revoke {k.name}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
