import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Copyable, Field, FormError, SelectField, ShownOnce } from '../../../components/Form.tsx';
import { type Appearance, AppearanceFields, appearanceSettings, DEFAULT_APPEARANCE, embedTag, WidgetPreview } from '../../../components/WidgetAppearance.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, useChosen } from '../api.ts';

const WIDGETS = '/v1/widgets';

export default function WidgetsSettings() {
  const widgets = useQuery($api.queryOptions('get', WIDGETS, { params: { query: { limit: 100 } } }));
  const [selected, setSelected] = useState<string | 'new'>();
  // A new widget's identity secret comes once, in the answer to its creation: shown until dismissed.
  const [created, setCreated] = useState<{ id: string; secret: string }>();
  const list = widgets.data?.data ?? [];
  const current = selected === 'new' ? undefined : (list.find((w) => w.id === selected) ?? list[0]);
  return (
    <>
      <div className="toolbar">
        <label htmlFor="widget-pick">Widget</label>
        <select id="widget-pick" value={selected === 'new' ? 'new' : (current?.id ?? 'new')} onChange={(e) => setSelected(e.target.value)}>
          {list.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name}
            </option>
          ))}
          <option value="new">New widget…</option>
        </select>
      </div>
      {widgets.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <WidgetEditor
          widget={current}
          key={current?.id ?? 'new'}
          onSaved={(id, secret) => {
            setSelected(id);
            setCreated(id && secret ? { id, secret } : undefined);
          }}
        />
      )}
      {current && (
        <>
          <Domains widget={current} />
          <Identity widget={current} key={current.id} createdSecret={created?.id === current.id ? created.secret : undefined} onSecretDone={() => setCreated(undefined)} />
        </>
      )}
    </>
  );
}

function WidgetEditor({ widget, onSaved }: { widget: Schemas['Widget'] | undefined; onSaved: (id: string | undefined, secret?: string) => void }) {
  const [name, setName] = useState(widget?.name ?? '');
  const [appearance, setAppearance] = useState<Appearance>({ ...DEFAULT_APPEARANCE, ...widget?.settings });
  const [botId, setBotId] = useState(widget?.settings.bot_id ?? '');
  const bots = useQuery($api.queryOptions('get', '/v1/bots', { params: { query: { limit: 100 } } }));
  const save = useAction(
    async () => {
      if (widget) {
        return fetchClient.PATCH('/v1/widgets/{id}', { params: { path: { id: widget.id } }, body: { name, settings: { ...appearanceSettings(appearance), bot_id: botId || null } } });
      }
      return fetchClient.POST(WIDGETS, { body: { name, settings: { ...appearanceSettings(appearance), ...(botId ? { bot_id: botId } : {}) } } });
    },
    [WIDGETS],
    (saved) => onSaved(saved.id, 'identity_secret' in saved && typeof saved.identity_secret === 'string' ? saved.identity_secret : undefined),
  );
  const remove = useAction(() => fetchClient.DELETE('/v1/widgets/{id}', { params: { path: { id: widget!.id } } }), [WIDGETS], () => onSaved(undefined));
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    save.mutate(undefined);
  };
  return (
    <section aria-labelledby="widget-heading">
      <h2 id="widget-heading">{widget ? 'Look and words' : 'New widget'}</h2>
      <div className="with-preview">
        <form onSubmit={submit} noValidate className="stack">
          <Field label="Widget name" name="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} required error={save.error} />
          <AppearanceFields value={appearance} onChange={setAppearance} error={save.error} />
          <SelectField label="Hand new conversations to a bot" name="settings.bot_id" value={botId} onChange={(e) => setBotId(e.target.value)} error={save.error}>
            <option value="">No bot: straight to the team</option>
            {(bots.data?.data ?? []).map((b) => (
              <option key={b.id} value={b.id}>
                {b.name}
              </option>
            ))}
          </SelectField>
          <FormError error={save.error ?? remove.error} fields={['name', 'settings']} />
          {save.isSuccess && (
            <p className="notice" role="status">
              Saved.
            </p>
          )}
          <div className="buttons">
            <button type="submit" className="primary" disabled={save.isPending}>
              {widget ? 'Save widget' : 'Create widget'}
            </button>
            {widget && (
              <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
                Delete widget
              </button>
            )}
          </div>
        </form>
        <WidgetPreview value={appearance} />
      </div>
      {widget && (
        <>
          <h3>Embed tag</h3>
          <Copyable value={embedTag(widget.id)} label="Embed tag" multiline />
        </>
      )}
    </section>
  );
}

function Domains({ widget }: { widget: Schemas['Widget'] }) {
  const domains = useQuery($api.queryOptions('get', '/v1/domains', { params: { query: { widget_id: widget.id, limit: 100 } } }));
  const add = useAction((domain: string) => fetchClient.POST('/v1/domains', { body: { widget_id: widget.id, domain } }), ['/v1/domains']);
  const remove = useAction((id: string) => fetchClient.DELETE('/v1/domains/{id}', { params: { path: { id } } }), ['/v1/domains']);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    add.mutate(String(new FormData(form).get('domain')), { onSuccess: () => form.reset() });
  };
  return (
    <section aria-labelledby="domains-heading">
      <h2 id="domains-heading">Allowed domains</h2>
      <p className="muted">The bubble answers only on these host names (ports do not matter); *.example.com allows every subdomain.</p>
      <form onSubmit={submit} noValidate className="inline-form">
        <Field label="Domain" name="domain" required maxLength={253} placeholder="shop.example.com" error={add.error} />
        <button type="submit" className="primary" disabled={add.isPending}>
          Allow domain
        </button>
      </form>
      <FormError error={add.error ?? remove.error} fields={['domain']} />
      <ul className="rows" aria-label="Allowed domains">
        {(domains.data?.data ?? []).map((d) => (
          <li key={d.id}>
            <span>{d.domain}</span>
            <button type="button" className="danger" onClick={() => remove.mutate(d.id)}>
              Remove {d.domain}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

const snippet = (secret: string, widgetId: string) => `// On your server: the signed-in user's e-mail, signed with the widget's secret.
import { createHmac } from 'node:crypto';
const userHash = createHmac('sha256', process.env.CHAT_IDENTITY_SECRET ?? '${secret}')
  .update(user.email.trim().toLowerCase()).digest('hex');
// In the page: <script src="${location.origin}/widget.js" data-widget-id="${widgetId}"
//   data-user-email="\${user.email}" data-user-hash="\${userHash}" async></script>`;

function Identity({ widget, createdSecret, onSecretDone }: { widget: Schemas['Widget']; createdSecret: string | undefined; onSecretDone: () => void }) {
  const [rotated, setSecret] = useState<string>();
  const secret = rotated ?? createdSecret;
  const rotate = useAction(() => fetchClient.POST('/v1/widgets/{id}/identity-secret', { params: { path: { id: widget.id } } }), [WIDGETS], (s) => setSecret(s.identity_secret));
  const require = useAction((on: boolean) => fetchClient.PATCH('/v1/widgets/{id}', { params: { path: { id: widget.id } }, body: { identity_required: on } }), [WIDGETS]);
  const required = useChosen<boolean>();
  return (
    <section aria-labelledby="identity-heading">
      <h2 id="identity-heading">Identity verification</h2>
      <p className="muted">
        Your server signs each signed-in visitor's e-mail with the widget's secret, so that nobody can chat as someone else. With it required, the bubble talks only to verified
        visitors.
      </p>
      <label className="check">
        <input
          type="checkbox"
          checked={required.shown(widget.id, widget.identity_verification.required)}
          onChange={(e) => {
            required.choose(widget.id, e.target.checked);
            require.mutate(e.target.checked, { onSettled: () => required.settle(widget.id) });
          }}
        />{' '}
        Require verified visitors on this widget
      </label>
      <div className="buttons">
        <button type="button" onClick={() => rotate.mutate(undefined)} disabled={rotate.isPending}>
          Make a new secret
        </button>
      </div>
      <FormError error={rotate.error ?? require.error} fields={[]} />
      {secret && (
        <ShownOnce
          label="Identity secret"
          value={secret}
          onDone={() => {
            setSecret(undefined);
            onSecretDone();
          }}
        />
      )}
      <h3>Server snippet</h3>
      <Copyable value={snippet(secret ?? 'your identity secret', widget.id)} label="Server snippet" multiline />
    </section>
  );
}
