import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError, SelectField, ShownOnce } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction } from '../api.ts';

const BOTS = '/v1/bots';
type Kind = Schemas['BotKind'];
const KINDS: Record<Kind, string> = {
  faq: 'FAQ: answers from your canned responses',
  llm: 'AI: a language model (OpenAI-compatible API)',
  webhook: 'Your own: your server answers through the API',
};

export default function BotsSettings() {
  const bots = useQuery($api.queryOptions('get', BOTS, { params: { query: { limit: 100 } } }));
  const departments = useQuery($api.queryOptions('get', '/v1/departments', { params: { query: { limit: 100 } } }));
  const [kind, setKind] = useState<Kind>('faq');
  const [secrets, setSecrets] = useState<{ label: string; value: string }[]>([]);
  const create = useAction((body: Schemas['BotCreate']) => fetchClient.POST(BOTS, { body }), [BOTS], (b) =>
    setSecrets(b.kind === 'webhook' ? [{ label: `API key of ${b.name}.`, value: b.api_key }, { label: `Signing secret of ${b.name}.`, value: b.secret }] : []),
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    const department = text('handoff_department_id');
    const body: Schemas['BotCreate'] = {
      name: text('name'),
      kind,
      ...(department ? { handoff_department_id: department } : {}),
      ...(kind === 'webhook' ? { webhook_url: text('webhook_url') } : {}),
      ...(kind === 'llm' ? { llm: { base_url: text('llm.base_url'), model: text('llm.model'), api_key: text('llm.api_key') } } : {}),
    };
    create.mutate(body, { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">A bot answers a widget's new conversations first and hands them to the team when it cannot help. Choose the widget's bot under Widgets.</p>
      {secrets.map((s) => (
        <ShownOnce key={s.label} label={s.label} value={s.value} />
      ))}
      <form onSubmit={submit} noValidate className="stack" aria-label="New bot">
        <Field label="Bot name" name="name" required maxLength={100} error={create.error} />
        <SelectField label="Kind" name="kind" value={kind} onChange={(e) => setKind(e.target.value as Kind)} error={create.error}>
          {Object.entries(KINDS).map(([k, label]) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </SelectField>
        {kind === 'webhook' && <Field label="Webhook URL" name="webhook_url" type="url" required error={create.error} />}
        {kind === 'llm' && (
          <>
            <Field label="API base URL" name="llm.base_url" type="url" required placeholder="https://api.openai.com/v1" error={create.error} />
            <Field label="Model" name="llm.model" required error={create.error} />
            <Field label="API key of the model" name="llm.api_key" type="password" autoComplete="off" required error={create.error} />
          </>
        )}
        <SelectField label="Hand over to" name="handoff_department_id" defaultValue="" error={create.error}>
          <option value="">The whole team</option>
          {(departments.data?.data ?? []).map((dep) => (
            <option key={dep.id} value={dep.id}>
              {dep.name}
            </option>
          ))}
        </SelectField>
        <FormError error={create.error} fields={['name', 'kind', 'webhook_url', 'llm', 'handoff_department_id']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add bot
        </button>
      </form>
      <ul className="cards">
        {(bots.data?.data ?? []).map((b) => (
          <BotCard key={b.id} bot={b} onKey={(value) => setSecrets([{ label: `New API key of ${b.name}.`, value }])} />
        ))}
      </ul>
    </>
  );
}

function BotCard({ bot: b, onKey }: { bot: Schemas['Bot']; onKey: (key: string) => void }) {
  const path = { params: { path: { id: b.id } } };
  const update = useAction((body: Schemas['BotUpdate']) => fetchClient.PATCH('/v1/bots/{id}', { ...path, body }), [BOTS]);
  const remove = useAction(() => fetchClient.DELETE('/v1/bots/{id}', path), [BOTS]);
  const rotate = useAction(() => fetchClient.POST('/v1/bots/{id}/rotate-key', path), [BOTS], (k) => onKey(k.api_key));
  return (
    <li className="card" aria-label={b.name}>
      <div className="card-head">
        <strong>{b.name}</strong> <span>{KINDS[b.kind]}</span> <span className={b.enabled ? 'ok' : 'warn'}>{b.enabled ? 'On' : 'Off'}</span>
      </div>
      <div className="buttons">
        <button type="button" onClick={() => update.mutate({ enabled: !b.enabled })}>
          {b.enabled ? 'Turn off' : 'Turn on'} {b.name}
        </button>
        {b.kind === 'webhook' && (
          <button type="button" onClick={() => rotate.mutate(undefined)}>
            New API key for {b.name}
          </button>
        )}
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete {b.name}
        </button>
      </div>
      <FormError error={update.error ?? remove.error ?? rotate.error} fields={[]} />
    </li>
  );
}
