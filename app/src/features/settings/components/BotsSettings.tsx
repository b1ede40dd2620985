import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError, GroupFinding, SelectField, ShownOnce, TextAreaField } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, useChosen } from '../api.ts';

const BOTS = '/v1/bots';
const WIDGETS = '/v1/widgets';
type Kind = Schemas['BotKind'];
const KINDS: Record<Kind, string> = {
  faq: 'FAQ: answers from your canned responses',
  llm: 'AI: a language model (OpenAI-compatible API)',
  webhook: 'Your own: your server answers through the API',
};
/** The bot's fields the service checks, by the name its findings give them. */
const BOT_FIELDS = ['name', 'kind', 'avatar_url', 'webhook_url', 'handoff_department_id', 'llm'];

type Secret = { label: string; value: string };

const text = (d: FormData, k: string) => String(d.get(k) ?? '').trim();

export default function BotsSettings() {
  const bots = useQuery($api.queryOptions('get', BOTS, { params: { query: { limit: 100 } } }));
  const [kind, setKind] = useState<Kind>('faq');
  const [secrets, setSecrets] = useState<Secret[]>([]);
  const create = useAction((body: Schemas['BotCreate']) => fetchClient.POST(BOTS, { body }), [BOTS], (b) =>
    setSecrets(b.kind === 'webhook' ? [{ label: `API key of ${b.name}.`, value: b.api_key }, { label: `Signing secret of ${b.name}.`, value: b.secret }] : []),
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const department = text(d, 'handoff_department_id');
    const avatar = text(d, 'avatar_url');
    const prompt = text(d, 'llm.system_prompt');
    const timeout = text(d, 'llm.timeout_ms');
    const body: Schemas['BotCreate'] = {
      name: text(d, 'name'),
      kind,
      ...(avatar ? { avatar_url: avatar } : {}),
      ...(department ? { handoff_department_id: department } : {}),
      ...(kind === 'webhook' ? { webhook_url: text(d, 'webhook_url') } : {}),
      ...(kind === 'llm'
        ? { llm: { base_url: text(d, 'llm.base_url'), model: text(d, 'llm.model'), api_key: text(d, 'llm.api_key'), ...(prompt ? { system_prompt: prompt } : {}), ...(timeout ? { timeout_ms: Number(timeout) } : {}) } }
        : {}),
    };
    create.mutate(body, { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">A bot answers a widget's new conversations first and hands them to the team when it cannot help. Choose below, or under Widgets, which widgets hand their conversations to a bot.</p>
      {secrets.map((s) => (
        <ShownOnce key={s.label} label={s.label} value={s.value} onDone={() => setSecrets((all) => all.filter((x) => x !== s))} />
      ))}
      <form onSubmit={submit} noValidate className="stack" aria-label="New bot">
        <Field label="Bot name" name="name" required maxLength={100} hint="What visitors see as the author of its messages" error={create.error} />
        <SelectField label="Kind" name="kind" value={kind} onChange={(e) => setKind(e.target.value as Kind)} error={create.error}>
          {Object.entries(KINDS).map(([k, label]) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </SelectField>
        {kind === 'webhook' && <Field label="Webhook URL" name="webhook_url" type="url" required error={create.error} />}
        {kind === 'llm' && <LlmFields error={create.error} />}
        <BotCommonFields error={create.error} />
        <FormError error={create.error} fields={BOT_FIELDS} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add bot
        </button>
      </form>
      <ul className="cards">
        {(bots.data?.data ?? []).map((b) => (
          <BotCard key={b.id} bot={b} onSecret={(s) => setSecrets([s])} />
        ))}
      </ul>
    </>
  );
}

/** The chat-completions endpoint's settings; a bot that has them already keeps its key unless a new one is typed. */
function LlmFields({ error, llm }: { error: unknown; llm?: Schemas['BotLlmView'] }) {
  return (
    <fieldset>
      <legend>Language model</legend>
      <Field label="API base URL" name="llm.base_url" type="url" required placeholder="https://api.openai.com/v1" defaultValue={llm?.base_url} hint="Requests go to its /chat/completions" error={error} />
      <Field label="Model" name="llm.model" required maxLength={200} defaultValue={llm?.model} error={error} />
      <Field
        label={llm ? 'New API key of the model' : 'API key of the model'}
        name="llm.api_key"
        type="password"
        autoComplete="off"
        required={!llm}
        maxLength={500}
        hint={llm ? (llm.api_key_set ? 'A key is stored and never shown; leave empty to keep it.' : 'No key is stored.') : undefined}
        error={error}
      />
      <TextAreaField label="System prompt" name="llm.system_prompt" maxLength={10000} rows={3} defaultValue={llm?.system_prompt ?? ''} hint="Optional: how the bot should answer" error={error} />
      <Field label="Time limit (ms)" name="llm.timeout_ms" type="number" min={100} max={60000} defaultValue={llm?.timeout_ms ?? 5000} hint="No complete answer by then: the conversation goes to the team" error={error} />
      <GroupFinding error={error} name="llm" shown={['llm.base_url', 'llm.model', 'llm.api_key', 'llm.system_prompt', 'llm.timeout_ms']} />
    </fieldset>
  );
}

function BotCommonFields({ error, bot }: { error: unknown; bot?: Schemas['Bot'] }) {
  const departments = useQuery($api.queryOptions('get', '/v1/departments', { params: { query: { limit: 100 } } }));
  return (
    <>
      <Field label="Avatar URL" name="avatar_url" type="url" defaultValue={bot?.avatar_url ?? ''} hint="Optional: the picture beside its messages" error={error} />
      {/* Made again once the departments are there, so that the bot's own is the one chosen. */}
      <SelectField
        key={departments.isSuccess ? 'listed' : 'listing'}
        label="Hand over to"
        name="handoff_department_id"
        defaultValue={bot?.handoff_department_id ?? ''}
        hint="Where a conversation goes when the bot cannot help"
        error={error}
      >
        <option value="">The whole team</option>
        {(departments.data?.data ?? []).map((dep) => (
          <option key={dep.id} value={dep.id}>
            {dep.name}
          </option>
        ))}
      </SelectField>
    </>
  );
}

function BotCard({ bot: b, onSecret }: { bot: Schemas['Bot']; onSecret: (secret: Secret) => void }) {
  const [editing, setEditing] = useState(false);
  const path = { params: { path: { id: b.id } } };
  const toggle = useAction((body: Schemas['BotUpdate']) => fetchClient.PATCH('/v1/bots/{id}', { ...path, body }), [BOTS]);
  const change = useAction((body: Schemas['BotUpdate']) => fetchClient.PATCH('/v1/bots/{id}', { ...path, body }), [BOTS], () => setEditing(false));
  const remove = useAction(() => fetchClient.DELETE('/v1/bots/{id}', path), [BOTS, WIDGETS]);
  const rotateKey = useAction(() => fetchClient.POST('/v1/bots/{id}/rotate-key', path), [], (k) => onSecret({ label: `New API key of ${b.name}.`, value: k.api_key }));
  const rotateSecret = useAction(() => fetchClient.POST('/v1/bots/{id}/rotate-secret', path), [], (s) => onSecret({ label: `New signing secret of ${b.name}.`, value: s.secret }));
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const avatar = text(d, 'avatar_url');
    const department = text(d, 'handoff_department_id');
    const body: Schemas['BotUpdate'] = { name: text(d, 'name'), avatar_url: avatar || null, handoff_department_id: department || null };
    if (b.kind === 'webhook') body.webhook_url = text(d, 'webhook_url');
    if (b.kind === 'llm') {
      const key = text(d, 'llm.api_key');
      const timeout = text(d, 'llm.timeout_ms');
      body.llm = {
        base_url: text(d, 'llm.base_url'),
        model: text(d, 'llm.model'),
        system_prompt: text(d, 'llm.system_prompt'),
        ...(timeout ? { timeout_ms: Number(timeout) } : {}),
        ...(key ? { api_key: key } : {}),
      };
    }
    change.mutate(body);
  };
  return (
    <li className="card" aria-label={b.name}>
      <div className="card-head">
        <strong>{b.name}</strong> <span>{KINDS[b.kind]}</span> <span className={b.enabled ? 'ok' : 'warn'}>{b.enabled ? 'On' : 'Off'}</span>
      </div>
      {b.kind === 'llm' && b.llm && (
        <p className="muted">
          Model {b.llm.model} at {b.llm.base_url}
          {b.llm.api_key_set ? '' : ' (no key stored)'}
        </p>
      )}
      {b.kind === 'webhook' && b.webhook_url && <p className="muted url">Events go to {b.webhook_url}</p>}
      <div className="buttons">
        <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>
          Settings of {b.name}
        </button>
        <button type="button" onClick={() => toggle.mutate({ enabled: !b.enabled })}>
          {b.enabled ? 'Turn off' : 'Turn on'} {b.name}
        </button>
        {b.kind === 'webhook' && (
          <>
            <button type="button" onClick={() => rotateKey.mutate(undefined)}>
              New API key for {b.name}
            </button>
            <button type="button" onClick={() => rotateSecret.mutate(undefined)}>
              New signing secret for {b.name}
            </button>
          </>
        )}
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete {b.name}
        </button>
      </div>
      <FormError error={toggle.error ?? remove.error ?? rotateKey.error ?? rotateSecret.error} fields={[]} />
      {editing && (
        <form onSubmit={submit} noValidate className="stack" aria-label={`Settings of ${b.name}`}>
          <Field label="Bot name" name="name" required maxLength={100} defaultValue={b.name} error={change.error} />
          {b.kind === 'webhook' && <Field label="Webhook URL" name="webhook_url" type="url" required defaultValue={b.webhook_url ?? ''} error={change.error} />}
          {b.kind === 'llm' && <LlmFields error={change.error} llm={b.llm ?? undefined} />}
          <BotCommonFields error={change.error} bot={b} />
          <FormError error={change.error} fields={BOT_FIELDS} />
          <div className="buttons">
            <button type="submit" className="primary" disabled={change.isPending}>
              Save bot
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <BotWidgets bot={b} />
    </li>
  );
}

/** Which widgets hand their new conversations to this bot: a widget's `settings.bot_id`, ticked here. */
function BotWidgets({ bot }: { bot: Schemas['Bot'] }) {
  const widgets = useQuery($api.queryOptions('get', WIDGETS, { params: { query: { limit: 100 } } }));
  const bots = useQuery($api.queryOptions('get', BOTS, { params: { query: { limit: 100 } } }));
  const hand = useAction(
    ({ id, botId }: { id: string; botId: string | null }) => fetchClient.PATCH('/v1/widgets/{id}', { params: { path: { id } }, body: { settings: { bot_id: botId } } }),
    [WIDGETS],
  );
  const chosen = useChosen<string | null>();
  const choose = (id: string, botId: string | null) => {
    chosen.choose(id, botId);
    hand.mutate({ id, botId }, { onSettled: () => chosen.settle(id) });
  };
  const list = widgets.data?.data ?? [];
  const nameOf = (id: string) => bots.data?.data.find((x) => x.id === id)?.name ?? 'another bot';
  return (
    <fieldset>
      <legend>Widgets that hand their conversations to {bot.name}</legend>
      {list.length === 0 && <p className="muted">No widgets yet.</p>}
      {list.map((w) => {
        const current = chosen.shown(w.id, w.settings.bot_id ?? null);
        return (
          <label key={w.id} className="check">
            <input type="checkbox" checked={current === bot.id} disabled={hand.isPending} onChange={(e) => choose(w.id, e.target.checked ? bot.id : null)} /> {w.name}
            {current && current !== bot.id && <span className="muted"> (now to {nameOf(current)})</span>}
          </label>
        );
      })}
      <FormError error={hand.error} fields={[]} />
    </fieldset>
  );
}
