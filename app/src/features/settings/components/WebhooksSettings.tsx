import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, fieldErrors, FormError, ShownOnce } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, when } from '../api.ts';

type EventType = Schemas['WebhookEventType'];
const HOOKS = '/v1/webhooks';
const DELIVERIES = '/v1/webhooks/{id}/deliveries';
const EVENTS: EventType[] = [
  'conversation.created',
  'conversation.updated',
  'conversation.assigned',
  'conversation.transferred',
  'conversation.closed',
  'conversation.reopened',
  'conversation.handed_off',
  'conversation.idle',
  'conversation.queued',
  'conversation.returned',
  'message.created',
  'message.read',
  'csat.submitted',
];
const DISABLED_BECAUSE: Record<string, string> = {
  manual: 'disabled by a member',
  gone: 'disabled: the receiver answered 410 Gone',
  failing: 'disabled: five days of failed deliveries',
};

export default function WebhooksSettings() {
  const hooks = useQuery($api.queryOptions('get', HOOKS, { params: { query: { limit: 100 } } }));
  const [secret, setSecret] = useState<{ url: string; secret: string }>();
  const [open, setOpen] = useState<string>();
  const create = useAction((body: Schemas['WebhookCreate']) => fetchClient.POST(HOOKS, { body }), [HOOKS], (w) => {
    setSecret({ url: w.url, secret: w.secret });
    setOpen(w.id);
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const description = String(data.get('description') ?? '');
    create.mutate({ url: String(data.get('url')), events: eventsOf(data), ...(description ? { description } : {}) }, { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">Your servers hear about conversations as they happen: each event is posted, signed (Standard Webhooks), and retried for days.</p>
      {secret && <ShownOnce label={`Signing secret for ${secret.url}.`} value={secret.secret} onDone={() => setSecret(undefined)} />}
      <form onSubmit={submit} noValidate className="stack" aria-label="New endpoint">
        <Field label="Endpoint URL" name="url" type="url" required placeholder="https://example.com/chat-events" error={create.error} />
        <Field label="Description" name="description" maxLength={500} error={create.error} />
        <EventChoice error={create.error} />
        <FormError error={create.error} fields={['url', 'description', 'events']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add endpoint
        </button>
      </form>
      <ul className="cards">
        {(hooks.data?.data ?? []).map((w) => (
          <Endpoint key={w.id} hook={w} open={open === w.id} onToggle={() => setOpen(open === w.id ? undefined : w.id)} onSecret={(s) => setSecret({ url: w.url, secret: s })} />
        ))}
      </ul>
    </>
  );
}

function eventsOf(data: FormData): EventType[] {
  const chosen = data.getAll('events').map(String) as EventType[];
  return chosen.includes('*') ? ['*'] : chosen;
}

function EventChoice({ error, chosen = ['*'] }: { error: unknown; chosen?: EventType[] }) {
  const finding = [...fieldErrors(error)].find(([k]) => k === 'events' || k.startsWith('events.'))?.[1];
  return (
    <fieldset>
      <legend>Events</legend>
      <label className="check">
        <input type="checkbox" name="events" value="*" defaultChecked={chosen.includes('*')} /> Every event
      </label>
      <div className="scope-grid">
        {EVENTS.map((e) => (
          <label key={e} className="check">
            <input type="checkbox" name="events" value={e} defaultChecked={chosen.includes(e)} /> {e}
          </label>
        ))}
      </div>
      {finding && (
        <p className="error field-error" role="alert">
          {finding}
        </p>
      )}
    </fieldset>
  );
}

function Endpoint({ hook: w, open, onToggle, onSecret }: { hook: Schemas['Webhook']; open: boolean; onToggle: () => void; onSecret: (secret: string) => void }) {
  const path = { params: { path: { id: w.id } } };
  const qc = useQueryClient();
  // While it is being deleted the log stops asking (it polls): a poll after the delete would meet a 404.
  const [removing, setRemoving] = useState(false);
  const update = useAction((body: Schemas['WebhookUpdate']) => fetchClient.PATCH('/v1/webhooks/{id}', { ...path, body }), [HOOKS]);
  const remove = useAction(async () => {
    setRemoving(true);
    await qc.cancelQueries({ queryKey: ['get', DELIVERIES] });
    return fetchClient.DELETE('/v1/webhooks/{id}', path);
  }, [HOOKS]);
  const rotate = useAction(() => fetchClient.POST('/v1/webhooks/{id}/rotate-secret', path), [HOOKS], (s) => onSecret(s.secret));
  const test = useAction(() => fetchClient.POST('/v1/webhooks/{id}/test', path), [DELIVERIES]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    update.mutate({ url: String(data.get('url')), description: String(data.get('description') ?? ''), events: eventsOf(data) });
  };
  const state = w.enabled ? 'Enabled' : `Disabled (${DISABLED_BECAUSE[w.disabled_reason ?? 'manual'] ?? w.disabled_reason})`;
  return (
    <li className="card" aria-label={w.url}>
      <div className="card-head">
        <strong className="url">{w.url}</strong>
        <span className={w.enabled ? 'ok' : 'warn'}>{state}</span>
        <button type="button" aria-expanded={open} onClick={onToggle}>
          {open ? 'Hide' : 'Manage'} <span className="visually-hidden">{w.url}</span>
        </button>
      </div>
      {open && (
        <>
          <form onSubmit={submit} noValidate className="stack">
            <Field label="Endpoint URL" name="url" type="url" defaultValue={w.url} required error={update.error} />
            <Field label="Description" name="description" defaultValue={w.description} maxLength={500} error={update.error} />
            <EventChoice error={update.error} chosen={w.events} />
            <FormError error={update.error} fields={['url', 'description', 'events']} />
            <div className="buttons">
              <button type="submit" className="primary">
                Save endpoint
              </button>
              {w.enabled ? (
                <button type="button" onClick={() => update.mutate({ enabled: false })}>
                  Disable
                </button>
              ) : (
                <button type="button" onClick={() => update.mutate({ enabled: true })}>
                  Re-enable
                </button>
              )}
              <button type="button" onClick={() => rotate.mutate(undefined)}>
                Rotate signing secret
              </button>
              <button type="button" onClick={() => test.mutate(undefined)} disabled={!w.enabled}>
                Send a test event
              </button>
              <button type="button" className="danger" onClick={() => remove.mutate(undefined, { onError: () => setRemoving(false) })}>
                Delete endpoint
              </button>
            </div>
          </form>
          <FormError error={remove.error ?? rotate.error ?? test.error} fields={[]} />
          {test.isSuccess && (
            <p className="notice" role="status">
              Test event sent; its delivery shows below.
            </p>
          )}
          {!removing && <Deliveries webhookId={w.id} />}
        </>
      )}
    </li>
  );
}

function Deliveries({ webhookId }: { webhookId: string }) {
  const deliveries = useQuery({ ...$api.queryOptions('get', DELIVERIES, { params: { path: { id: webhookId }, query: { limit: 20 } } }), refetchInterval: 2000, staleTime: 0 });
  const redeliver = useAction(
    (deliveryId: string) => fetchClient.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', { params: { path: { id: webhookId, delivery_id: deliveryId } } }),
    [DELIVERIES],
  );
  const rows = deliveries.data?.data ?? [];
  return (
    <section aria-label="Delivery log">
      <h3>Delivery log</h3>
      <FormError error={redeliver.error} fields={[]} />
      {rows.length === 0 ? (
        <p className="muted">No deliveries yet.</p>
      ) : (
        <table className="table deliveries">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Response</th>
              <th scope="col">Attempts</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id} data-status={d.status}>
                <td>{d.event_type}</td>
                <td>
                  {d.status}
                  {d.status === 'pending' && d.next_attempt_at && <span className="muted"> (next try {when(d.next_attempt_at)})</span>}
                </td>
                <td>{d.last_status_code ? `HTTP ${d.last_status_code}` : (d.last_error ?? '—')}</td>
                <td>{d.attempts}</td>
                <td>{when(d.created_at)}</td>
                <td>
                  <button type="button" onClick={() => redeliver.mutate(d.id)} disabled={d.status === 'pending'}>
                    Redeliver
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
