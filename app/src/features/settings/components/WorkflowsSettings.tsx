import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError, SelectField } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, when } from '../api.ts';

const FLOWS = '/v1/workflows';
type Trigger = Schemas['WorkflowTrigger']['type'];
type ActionType = Schemas['WorkflowAction']['type'];
const TRIGGERS: Record<Trigger, string> = {
  'conversation.created': 'A conversation starts',
  'message.created': 'A message is written',
  'conversation.idle': 'A conversation waits without an answer',
  'conversation.closed': 'A conversation is closed',
};
const FIELDS = ['conversation.widget_id', 'conversation.department_id', 'conversation.priority', 'conversation.status', 'conversation.assigned', 'conversation.business_hours', 'contact.email', 'message.content', 'message.sender_type'];
const OPERATORS: Schemas['WorkflowConditionOperator'][] = ['equals', 'not_equals', 'contains', 'not_contains', 'is_set', 'is_not_set'];
const ACTIONS: Partial<Record<ActionType, string>> = {
  send_message: 'Send a message to the visitor',
  set_priority: 'Set the priority',
  transfer: 'Transfer to a department',
  close: 'Close the conversation',
  send_transcript: 'Mail the transcript',
};

function actionOf(type: ActionType, value: string): Schemas['WorkflowAction'] {
  switch (type) {
    case 'send_message':
      return { type, content: value };
    case 'set_priority':
      return { type, priority: value as Schemas['Priority'] };
    case 'transfer':
      return { type, department_id: value };
    case 'send_transcript':
      return value ? { type, to: value } : { type };
    default:
      return { type: 'close' };
  }
}

export default function WorkflowsSettings() {
  const flows = useQuery($api.queryOptions('get', FLOWS, { params: { query: { limit: 100 } } }));
  const departments = useQuery($api.queryOptions('get', '/v1/departments', { params: { query: { limit: 100 } } }));
  const [trigger, setTrigger] = useState<Trigger>('conversation.created');
  const [action, setAction] = useState<ActionType>('send_message');
  const create = useAction((body: Schemas['WorkflowCreate']) => fetchClient.POST(FLOWS, { body }), [FLOWS]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    const field = text('condition_field');
    const operator = text('condition_operator') as Schemas['WorkflowConditionOperator'];
    const value = text('condition_value');
    const conditions: Schemas['WorkflowCondition'][] = field ? [{ field, operator, ...(operator.startsWith('is_') ? {} : { value }) }] : [];
    const t: Schemas['WorkflowTrigger'] = trigger === 'conversation.idle' ? { type: trigger, minutes: Number(text('minutes')) } : { type: trigger };
    create.mutate({ name: text('name'), trigger: t, conditions, actions: [actionOf(action, text('action_value'))] }, { onSuccess: () => form.reset() });
  };
  return (
    <>
      <p className="muted">When something happens, and the conditions hold, the actions run: an automatic answer, a priority, a transfer.</p>
      <form onSubmit={submit} noValidate className="stack" aria-label="New workflow">
        <Field label="Workflow name" name="name" required maxLength={200} error={create.error} />
        <SelectField label="When" name="trigger.type" value={trigger} onChange={(e) => setTrigger(e.target.value as Trigger)} error={create.error} nested>
          {Object.entries(TRIGGERS).map(([k, label]) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </SelectField>
        {trigger === 'conversation.idle' && <Field label="Minutes without an answer" name="trigger.minutes" type="number" min={1} max={10080} defaultValue={15} error={create.error} />}
        <fieldset>
          <legend>Only if (optional)</legend>
          <SelectField label="Field" name="condition_field" defaultValue="" error={create.error}>
            <option value="">Always</option>
            {FIELDS.map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </SelectField>
          <SelectField label="Operator" name="condition_operator" defaultValue="equals" error={create.error}>
            {OPERATORS.map((o) => (
              <option key={o} value={o}>
                {o.replaceAll('_', ' ')}
              </option>
            ))}
          </SelectField>
          <Field label="Value" name="condition_value" error={create.error} />
        </fieldset>
        <SelectField label="Then" name="actions" value={action} onChange={(e) => setAction(e.target.value as ActionType)} error={create.error} nested>
          {Object.entries(ACTIONS).map(([k, label]) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </SelectField>
        {action === 'send_message' && <Field label="Message" name="action_value" required error={create.error} />}
        {action === 'set_priority' && (
          <SelectField label="Priority" name="action_value" defaultValue="high" error={create.error}>
            {['low', 'normal', 'high', 'urgent'].map((p) => (
              <option key={p}>{p}</option>
            ))}
          </SelectField>
        )}
        {action === 'transfer' && (
          <SelectField label="Department" name="action_value" error={create.error}>
            {(departments.data?.data ?? []).map((dep) => (
              <option key={dep.id} value={dep.id}>
                {dep.name}
              </option>
            ))}
          </SelectField>
        )}
        {action === 'send_transcript' && <Field label="To (empty: the visitor)" name="action_value" type="email" error={create.error} />}
        <FormError error={create.error} fields={['name', 'trigger', 'actions', 'conditions']} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add workflow
        </button>
      </form>
      <ul className="cards">
        {(flows.data?.data ?? []).map((w) => (
          <Flow key={w.id} flow={w} />
        ))}
      </ul>
    </>
  );
}

function Flow({ flow: w }: { flow: Schemas['Workflow'] }) {
  const [runsOpen, setRunsOpen] = useState(false);
  const path = { params: { path: { id: w.id } } };
  const update = useAction((body: Schemas['WorkflowUpdate']) => fetchClient.PATCH('/v1/workflows/{id}', { ...path, body }), [FLOWS]);
  const remove = useAction(() => fetchClient.DELETE('/v1/workflows/{id}', path), [FLOWS]);
  return (
    <li className="card" aria-label={w.name}>
      <div className="card-head">
        <strong>{w.name}</strong> <span>{TRIGGERS[w.trigger.type]}</span> <span className={w.enabled ? 'ok' : 'warn'}>{w.enabled ? 'On' : 'Off'}</span>
      </div>
      <p className="muted">
        {(w.conditions ?? []).map((c) => `${c.field} ${c.operator.replaceAll('_', ' ')} ${c.value ?? ''}`).join(', ') || 'Always'} → {w.actions.map((a) => ACTIONS[a.type] ?? a.type).join(', ')}
      </p>
      <div className="buttons">
        <button type="button" onClick={() => update.mutate({ enabled: !w.enabled })}>
          {w.enabled ? 'Turn off' : 'Turn on'} {w.name}
        </button>
        <button type="button" aria-expanded={runsOpen} onClick={() => setRunsOpen(!runsOpen)}>
          Runs of {w.name}
        </button>
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete {w.name}
        </button>
      </div>
      <FormError error={update.error ?? remove.error} fields={[]} />
      {runsOpen && <Runs id={w.id} />}
    </li>
  );
}

function Runs({ id }: { id: string }) {
  const runs = useQuery($api.queryOptions('get', '/v1/workflows/{id}/runs', { params: { path: { id }, query: { limit: 20 } } }));
  const rows = runs.data?.data ?? [];
  if (rows.length === 0) return <p className="muted">No runs yet.</p>;
  return (
    <ul className="rows" aria-label="Runs">
      {rows.map((r) => (
        <li key={r.id}>
          <span>{r.event_type}</span> <span>{r.status}</span> {r.skip_reason && <span>({r.skip_reason})</span>} <span>{when(r.created_at)}</span>
        </li>
      ))}
    </ul>
  );
}
