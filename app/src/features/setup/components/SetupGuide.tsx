// The first-run guide: name the workspace, make the chat bubble, put it on the website, and watch the
// first conversation arrive. Three screens, each over the API's own operations; leaving and coming back
// picks up the workspace's first widget where it was left.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from 'react';
import { Link, Navigate, useNavigate, useParams } from 'react-router';
import { Copyable, Field, FormError } from '../../../components/Form.tsx';
import { type Appearance, AppearanceFields, appearanceSettings, DEFAULT_APPEARANCE, embedTag, WidgetPreview } from '../../../components/WidgetAppearance.tsx';
import { $api, fetchClient, type Schemas, session } from '../../../lib/api.ts';
import { useLive, useTeam } from '../../../lib/hooks.ts';

const STEPS = [
  { id: 'workspace', label: 'Your workspace' },
  { id: 'widget', label: 'Your chat bubble' },
  { id: 'install', label: 'Your website' },
] as const;
type StepId = (typeof STEPS)[number]['id'];

export function SetupGuide() {
  const { step } = useParams();
  const { team, me } = useTeam();
  const current = STEPS.find((s) => s.id === step);
  if (team.isPending) return <p role="status">Loading…</p>;
  // Every step changes what only owners and admins may change (the API refuses an agent with 403).
  if (me?.role !== 'owner' && me?.role !== 'admin') return <Navigate to="/inbox/mine" replace />;
  if (!current) return <Navigate to="/setup/workspace" replace />;
  return (
    <div className="setup">
      <header className="top">
        <span className="brand">Set up Customer Chat</span>
        <Link to="/inbox/mine">Skip to the inbox</Link>
      </header>
      <nav aria-label="Setup steps" className="steps">
        <ol>
          {STEPS.map((s, i) => (
            <li key={s.id} aria-current={s.id === current.id ? 'step' : undefined}>
              <Link to={`/setup/${s.id}`}>
                <span className="step-number">{i + 1}</span> {s.label}
              </Link>
            </li>
          ))}
        </ol>
      </nav>
      <main className="setup-main">
        {current.id === 'workspace' && <WorkspaceStep />}
        {current.id === 'widget' && <WidgetStep />}
        {current.id === 'install' && <InstallStep />}
      </main>
    </div>
  );
}

function StepHeading({ step, children }: { step: StepId; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${STEPS.find((s) => s.id === step)!.label} · Set up · Customer Chat`;
    heading.current?.focus();
  }, [step]);
  return (
    <h1 ref={heading} tabIndex={-1}>
      {children}
    </h1>
  );
}

function useTenant() {
  const id = session.tenantId;
  // After a reload the access token (and its tenant) comes with the first call: the team list makes it.
  const team = useQuery($api.queryOptions('get', '/v1/team/members', { params: { query: { include: 'presence' } } }, { staleTime: 60_000 }));
  const tenant = useQuery({ ...$api.queryOptions('get', '/v1/tenants/{id}', { params: { path: { id: id ?? '' } } }), enabled: Boolean(id) && team.isSuccess });
  return { id, tenant };
}

function useFirstWidget() {
  const widgets = useQuery($api.queryOptions('get', '/v1/widgets', { params: { query: { limit: 1 } } }));
  return { widgets, widget: widgets.data?.data[0] };
}

function WorkspaceStep() {
  const { id, tenant } = useTenant();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const save = useMutation({
    mutationFn: async (name: string) => {
      const { data, error } = await fetchClient.PATCH('/v1/tenants/{id}', { params: { path: { id: id! } }, body: { name } });
      if (error) throw error;
      return data;
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['get', '/v1/tenants/{id}'] });
      void navigate('/setup/widget');
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    save.mutate(String(new FormData(e.currentTarget).get('name')));
  };
  return (
    <section className="step" aria-labelledby="step-heading">
      <StepHeading step="workspace">Name your workspace</StepHeading>
      <p className="notice">We sent you a mail with a link to confirm your address. Setting up goes on meanwhile.</p>
      {tenant.data ? (
        <form onSubmit={submit} noValidate className="stack">
          <Field label="Workspace name" name="name" defaultValue={tenant.data.name} required maxLength={200} hint="Your team sees it; invitations name it." error={save.error} />
          <FormError error={save.error} fields={['name']} />
          <button type="submit" className="primary" disabled={save.isPending}>
            Continue
          </button>
        </form>
      ) : (
        <p className="muted" role="status">
          Loading…
        </p>
      )}
    </section>
  );
}

function WidgetStep() {
  const { widgets, widget } = useFirstWidget();
  if (widgets.isPending) return <p role="status">Loading…</p>;
  return <WidgetForm widget={widget} key={widget?.id ?? 'new'} />;
}

function WidgetForm({ widget }: { widget: Schemas['Widget'] | undefined }) {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [name, setName] = useState(widget?.name ?? 'Website');
  const [appearance, setAppearance] = useState<Appearance>({ ...DEFAULT_APPEARANCE, ...widget?.settings });
  const save = useMutation({
    mutationFn: async () => {
      const settings = appearanceSettings(appearance);
      const { data, error } = widget
        ? await fetchClient.PATCH('/v1/widgets/{id}', { params: { path: { id: widget.id } }, body: { name, settings } })
        : await fetchClient.POST('/v1/widgets', { body: { name, settings } });
      if (error) throw error;
      return data;
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['get', '/v1/widgets'] });
      void navigate('/setup/install');
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <section className="step" aria-labelledby="step-heading">
      <StepHeading step="widget">Make your chat bubble</StepHeading>
      <div className="with-preview">
        <form onSubmit={submit} noValidate className="stack">
          <Field label="Widget name" name="name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} hint="For you: which website or page this bubble is on." error={save.error} />
          <AppearanceFields value={appearance} onChange={setAppearance} error={save.error} />
          <FormError error={save.error} fields={['name', 'settings']} />
          <button type="submit" className="primary" disabled={save.isPending}>
            Save and continue
          </button>
        </form>
        <WidgetPreview value={appearance} />
      </div>
    </section>
  );
}

function InstallStep() {
  const { widgets, widget } = useFirstWidget();
  if (widgets.isPending) return <p role="status">Loading…</p>;
  if (!widget) return <Navigate to="/setup/widget" replace />;
  return <Install widget={widget} />;
}

function Install({ widget }: { widget: Schemas['Widget'] }) {
  const qc = useQueryClient();
  const domainsQuery = $api.queryOptions('get', '/v1/domains', { params: { query: { widget_id: widget.id, limit: 100 } } });
  const domains = useQuery(domainsQuery);
  const add = useMutation({
    mutationFn: async (domain: string) => {
      const { data, error } = await fetchClient.POST('/v1/domains', { body: { widget_id: widget.id, domain } });
      if (error) throw error;
      return data;
    },
    onSuccess: () => qc.invalidateQueries({ queryKey: domainsQuery.queryKey }),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    add.mutate(String(new FormData(form).get('domain')), { onSuccess: () => form.reset() });
  };
  const allowed = domains.data?.data ?? [];
  const here = location.hostname;
  const testPage = `${import.meta.env.BASE_URL}widget-test.html?widget=${encodeURIComponent(widget.id)}`;
  const openTestPage = async () => {
    // The test page is on this service's own address, which must be allowed like any website.
    if (!allowed.some((d) => d.domain === here)) await add.mutateAsync(here).catch(() => undefined);
    window.open(testPage, '_blank', 'noopener');
  };
  return (
    <section className="step" aria-labelledby="step-heading">
      <StepHeading step="install">Put the bubble on your website</StepHeading>
      <h2>1. Allow your website</h2>
      <p>The bubble works only on the domains you allow here (and their pages): for example shop.example.com, or *.example.com for every subdomain.</p>
      <form onSubmit={submit} noValidate className="inline-form">
        <Field label="Website domain" name="domain" required maxLength={253} placeholder="shop.example.com" error={add.error} />
        <button type="submit" className="primary" disabled={add.isPending}>
          Allow
        </button>
      </form>
      <FormError error={add.error} fields={['domain']} />
      {allowed.length > 0 && (
        <ul className="tags" aria-label="Allowed domains">
          {allowed.map((d) => (
            <li key={d.id}>{d.domain}</li>
          ))}
        </ul>
      )}
      <h2>2. Paste this tag into your website</h2>
      <p>Put it just before <code>&lt;/body&gt;</code> on every page where the bubble should appear.</p>
      <Copyable value={embedTag(widget.id)} label="Embed tag" multiline />
      <h2>3. Send a test message</h2>
      <p>
        Write in the bubble on your website, or{' '}
        <button type="button" className="link" onClick={() => void openTestPage()}>
          open a test page with your bubble
        </button>
        {allowed.some((d) => d.domain === here) ? '' : ` (this allows ${here} too)`}.
      </p>
      <FirstConversation widgetId={widget.id} />
    </section>
  );
}

/** Waits for the widget's first conversation: live over the socket, and by asking every few seconds. */
function FirstConversation({ widgetId }: { widgetId: string }) {
  const qc = useQueryClient();
  const live = useLive();
  const options = $api.queryOptions('get', '/v1/conversations', { params: { query: { limit: 20 } } });
  const list = useQuery({ ...options, refetchInterval: 3000, staleTime: 0 });
  useEffect(() => live.onEvent((event) => void (event.type.startsWith('conversation.') && qc.invalidateQueries({ queryKey: options.queryKey }))), [live, qc, options.queryKey]);
  const first = list.data?.data.find((c) => c.widget_id === widgetId);
  if (!first) {
    return (
      <p className="waiting-first" role="status">
        <span className="spinner" aria-hidden="true" /> Waiting for the first message…
      </p>
    );
  }
  const view = first.status === 'open' ? 'unassigned' : first.status === 'closed' ? 'closed' : first.assigned_user_id === session.userId ? 'mine' : 'assigned';
  return (
    <div className="arrived" role="status">
      <p>
        <strong>It works.</strong> A visitor wrote: “{first.last_message}”
      </p>
      <Link className="button primary" to={`/inbox/${view}/${first.id}`}>
        Open it in the inbox
      </Link>
    </div>
  );
}
