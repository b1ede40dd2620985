// One workflow as a form, new or changed: its trigger, any number of conditions (all must hold) and of
// actions (run in order), each with the fields its kind takes. The service's findings show beside the
// field they name (`/body/conditions/1/value` beside the second condition's value); a finding about a
// whole condition or action shows at its group.
import { useQuery } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { Field, FormError, GroupFinding, SelectField, TextAreaField } from '../../../components/Form.tsx';
import { $api, type Schemas } from '../../../lib/api.ts';
import {
  ACTION_FIELDS,
  ACTIONS,
  type ActionDraft,
  type ActionType,
  ATTRIBUTE,
  branchFindings,
  type ConditionDraft,
  FIELDS,
  hasChoices,
  newAction,
  newCondition,
  type Operator,
  OPERATORS,
  operatorsOf,
  takesList,
  takesNoValue,
  type Trigger,
  TRIGGERS,
  type WorkflowDraft,
  workflowOf,
} from '../workflows.ts';

const MAX_CONDITIONS = 20;
const MAX_ACTIONS = 10;
const PRIORITIES: Schemas['Priority'][] = ['low', 'normal', 'high', 'urgent'];

interface Choice {
  value: string;
  label: string;
}

/** The lists a workflow's values are chosen from: the tenant's widgets, departments and labels. */
export function useChoices() {
  const page = { params: { query: { limit: 100 } } };
  const widgets = useQuery($api.queryOptions('get', '/v1/widgets', page));
  const departments = useQuery($api.queryOptions('get', '/v1/departments', page));
  const labels = useQuery($api.queryOptions('get', '/v1/labels', page));
  const of = (rows: { id: string; name: string }[] | undefined): Choice[] => (rows ?? []).map((r) => ({ value: r.id, label: r.name }));
  const fixed = (values: string[]): Choice[] => values.map((v) => ({ value: v, label: v }));
  const lists: Record<string, Choice[]> = {
    'conversation.widget_id': of(widgets.data?.data),
    'conversation.department_id': of(departments.data?.data),
    'conversation.labels': of(labels.data?.data),
    'conversation.priority': fixed(PRIORITIES),
    'conversation.status': fixed(['open', 'assigned', 'closed']),
    'conversation.business_hours': [
      { value: 'open', label: 'open (inside the hours)' },
      { value: 'closed', label: 'closed (outside the hours)' },
    ],
    'conversation.assigned': [
      { value: 'true', label: 'yes' },
      { value: 'false', label: 'no' },
    ],
    'message.sender_type': fixed(['visitor', 'user', 'bot', 'system']),
  };
  return {
    lists,
    departments: lists['conversation.department_id']!,
    labels: lists['conversation.labels']!,
    /** A stored value in words: a widget's, department's or label's name for its id. */
    nameOf: (field: string, value: string) => lists[field]?.find((c) => c.value === value)?.label ?? value,
  };
}

interface Props {
  initial: WorkflowDraft;
  /** The form's accessible name. */
  label: string;
  submitLabel: string;
  error: unknown;
  pending: boolean;
  onSubmit: (body: ReturnType<typeof workflowOf>, done: () => void) => void;
  onCancel?: () => void;
  /** What a reset (after a workflow was added) starts again from. */
  blank?: () => WorkflowDraft;
}

export function WorkflowForm({ initial, label, submitLabel, error, pending, onSubmit, onCancel, blank }: Props) {
  const [draft, setDraft] = useState(initial);
  const choices = useChoices();
  const setCondition = (key: number, patch: Partial<ConditionDraft>) => setDraft((d) => ({ ...d, conditions: d.conditions.map((c) => (c.key === key ? { ...c, ...patch } : c)) }));
  const setAction = (key: number, patch: Partial<ActionDraft>) => setDraft((d) => ({ ...d, actions: d.actions.map((a) => (a.key === key ? { ...a, ...patch } : a)) }));
  const moveUp = (i: number) =>
    setDraft((d) => {
      const actions = [...d.actions];
      [actions[i - 1], actions[i]] = [actions[i]!, actions[i - 1]!];
      return { ...d, actions };
    });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    onSubmit(workflowOf(draft), () => blank && setDraft(blank()));
  };
  const triggerError = branchFindings(error, 'trigger', draft.trigger === 'conversation.idle' ? ['minutes'] : []);
  return (
    <form onSubmit={submit} noValidate className="stack workflow-form" aria-label={label}>
      <Field label="Workflow name" name="name" value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} required maxLength={200} error={error} />
      <SelectField label="When" name="trigger.type" value={draft.trigger} onChange={(e) => setDraft({ ...draft, trigger: e.target.value as Trigger })} error={triggerError}>
        {Object.entries(TRIGGERS).map(([k, text]) => (
          <option key={k} value={k}>
            {text}
          </option>
        ))}
      </SelectField>
      {draft.trigger === 'conversation.idle' && (
        <Field label="Minutes without an answer" name="trigger.minutes" type="number" min={1} max={10080} value={draft.minutes} onChange={(e) => setDraft({ ...draft, minutes: e.target.value })} error={triggerError} />
      )}
      <GroupFinding error={triggerError} name="trigger" shown={['trigger.type', 'trigger.minutes']} />

      <fieldset>
        <legend>Only if all of these hold</legend>
        {draft.conditions.length === 0 && <p className="muted">No condition: every time.</p>}
        {draft.conditions.map((c, i) => (
          <ConditionRow key={c.key} index={i} condition={c} error={error} choices={choices.lists} onChange={(patch) => setCondition(c.key, patch)} onRemove={() => setDraft((d) => ({ ...d, conditions: d.conditions.filter((x) => x.key !== c.key) }))} />
        ))}
        <GroupFinding error={error} name="conditions" shown={draft.conditions.map((_, i) => `conditions.${i}`)} />
        <div className="buttons">
          <button type="button" onClick={() => setDraft((d) => ({ ...d, conditions: [...d.conditions, newCondition()] }))} disabled={draft.conditions.length >= MAX_CONDITIONS}>
            Add a condition
          </button>
        </div>
      </fieldset>

      <fieldset>
        <legend>Then, in this order</legend>
        {draft.actions.length === 0 && <p className="muted">No action yet: a workflow needs at least one.</p>}
        {draft.actions.map((a, i) => (
          <ActionRow
            key={a.key}
            index={i}
            action={a}
            error={error}
            departments={choices.departments}
            labels={choices.labels}
            onChange={(patch) => setAction(a.key, patch)}
            onRemove={() => setDraft((d) => ({ ...d, actions: d.actions.filter((x) => x.key !== a.key) }))}
            onMoveUp={i > 0 ? () => moveUp(i) : undefined}
          />
        ))}
        <GroupFinding error={error} name="actions" shown={draft.actions.map((_, i) => `actions.${i}`)} />
        <div className="buttons">
          <button type="button" onClick={() => setDraft((d) => ({ ...d, actions: [...d.actions, newAction()] }))} disabled={draft.actions.length >= MAX_ACTIONS}>
            Add an action
          </button>
        </div>
      </fieldset>

      <FormError error={error} fields={['name', 'trigger', 'conditions', 'actions']} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={pending}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

function ChoiceOptions({ choices, placeholder }: { choices: Choice[]; placeholder: string }) {
  return (
    <>
      <option value="">{placeholder}</option>
      {choices.map((c) => (
        <option key={c.value} value={c.value}>
          {c.label}
        </option>
      ))}
    </>
  );
}

function ConditionRow({ index, condition: c, error, choices, onChange, onRemove }: { index: number; condition: ConditionDraft; error: unknown; choices: Record<string, Choice[]>; onChange: (patch: Partial<ConditionDraft>) => void; onRemove: () => void }) {
  const at = `conditions.${index}`;
  const operators = operatorsOf(c.field);
  const list = choices[c.field] ?? [];
  // A field with choices is chosen from them, except that `contains` on a field other than labels is text.
  const chosen = hasChoices(c.field) && (c.field === 'conversation.labels' || (c.operator !== 'contains' && c.operator !== 'not_contains'));
  const changeField = (field: string) => onChange({ field, operator: operatorsOf(field).includes(c.operator) ? c.operator : operatorsOf(field)[0]!, value: '', values: [] });
  return (
    <fieldset className="workflow-row">
      <legend>Condition {index + 1}</legend>
      <div className="inline-form">
        <SelectField label="Field" name={`${at}.field`} value={c.field} onChange={(e) => changeField(e.target.value)} error={error}>
          {Object.entries(FIELDS).map(([k, text]) => (
            <option key={k} value={k}>
              {text}
            </option>
          ))}
        </SelectField>
        {c.field === ATTRIBUTE && <Field label="Attribute key" name={`${at}.attribute`} value={c.attribute} onChange={(e) => onChange({ attribute: e.target.value })} maxLength={64} hint="Letters, digits, _ and -" error={error} />}
        <SelectField label="Operator" name={`${at}.operator`} value={c.operator} onChange={(e) => onChange({ operator: e.target.value as Operator })} error={error}>
          {operators.map((o) => (
            <option key={o} value={o}>
              {OPERATORS[o]}
            </option>
          ))}
        </SelectField>
        {!takesNoValue(c.operator) && takesList(c.operator) && chosen && (
          <fieldset className="workflow-values">
            <legend>Values</legend>
            {list.map((choice) => (
              <label key={choice.value} className="check">
                <input
                  type="checkbox"
                  name={`${at}.value`}
                  value={choice.value}
                  checked={c.values.includes(choice.value)}
                  onChange={(e) => onChange({ values: e.target.checked ? [...c.values, choice.value] : c.values.filter((v) => v !== choice.value) })}
                />{' '}
                {choice.label}
              </label>
            ))}
            {list.length === 0 && <p className="muted">Nothing to choose from yet.</p>}
          </fieldset>
        )}
        {!takesNoValue(c.operator) && takesList(c.operator) && !chosen && (
          <Field label="Values" name={`${at}.value`} hint="Separated by commas" value={c.value} onChange={(e) => onChange({ value: e.target.value })} error={error} nested />
        )}
        {!takesNoValue(c.operator) && !takesList(c.operator) && chosen && (
          <SelectField label="Value" name={`${at}.value`} value={c.value} onChange={(e) => onChange({ value: e.target.value })} error={error} nested>
            <ChoiceOptions choices={list} placeholder="Choose…" />
          </SelectField>
        )}
        {!takesNoValue(c.operator) && !takesList(c.operator) && !chosen && <Field label="Value" name={`${at}.value`} value={c.value} onChange={(e) => onChange({ value: e.target.value })} maxLength={1000} error={error} nested />}
      </div>
      <GroupFinding error={error} name={at} shown={[`${at}.field`, `${at}.operator`, ...(takesNoValue(c.operator) || (takesList(c.operator) && chosen) ? [] : [`${at}.value`])]} />
      <div className="buttons">
        <button type="button" onClick={onRemove}>
          Remove condition {index + 1}
        </button>
      </div>
    </fieldset>
  );
}

interface ActionRowProps {
  index: number;
  action: ActionDraft;
  error: unknown;
  departments: Choice[];
  labels: Choice[];
  onChange: (patch: Partial<ActionDraft>) => void;
  onRemove: () => void;
  onMoveUp: (() => void) | undefined;
}

function ActionRow({ index, action: a, error: problem, departments, labels, onChange, onRemove, onMoveUp }: ActionRowProps) {
  const at = `actions.${index}`;
  const known = a.type in ACTIONS;
  const error = known ? branchFindings(problem, at, ACTION_FIELDS[a.type as ActionType]) : problem;
  const shown = [`${at}.type`];
  const field = (name: keyof ActionDraft) => {
    shown.push(`${at}.${name}`);
    return `${at}.${name}`;
  };
  let detail: ReactNode = null;
  switch (a.type) {
    case 'send_message':
      detail = <TextAreaField label="Message" name={field('content')} value={a.content} onChange={(e) => onChange({ content: e.target.value })} required maxLength={10000} rows={2} error={error} />;
      break;
    case 'set_priority':
      detail = (
        <SelectField label="Priority" name={field('priority')} value={a.priority} onChange={(e) => onChange({ priority: e.target.value })} error={error}>
          {PRIORITIES.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </SelectField>
      );
      break;
    case 'transfer':
      detail = (
        <SelectField label="Department" name={field('department_id')} value={a.department_id} onChange={(e) => onChange({ department_id: e.target.value })} error={error} hint={departments.length === 0 ? 'No departments yet: make them under Team.' : undefined}>
          <ChoiceOptions choices={departments} placeholder="Choose a department…" />
        </SelectField>
      );
      break;
    case 'add_label':
    case 'remove_label':
      detail = (
        <SelectField label="Label" name={field('label_id')} value={a.label_id} onChange={(e) => onChange({ label_id: e.target.value })} error={error} hint={labels.length === 0 ? 'No labels yet: they are made through the API (/v1/labels).' : undefined}>
          <ChoiceOptions choices={labels} placeholder="Choose a label…" />
        </SelectField>
      );
      break;
    case 'send_transcript':
      detail = <Field label="To" name={field('to')} type="email" value={a.to} onChange={(e) => onChange({ to: e.target.value })} hint="Empty: the contact's own e-mail address" error={error} />;
      break;
    case 'webhook':
      detail = (
        <Field label="URL" name={field('url')} type="url" value={a.url} onChange={(e) => onChange({ url: e.target.value })} required hint="The event is posted there, signed with the workflow's secret (Standard Webhooks)" error={error} />
      );
      break;
    default:
      if (!known) detail = <p className="muted">An action this app does not know ({a.type}): it is kept as it is.</p>;
  }
  return (
    <fieldset className="workflow-row">
      <legend>Action {index + 1}</legend>
      <SelectField label="Do" name={`${at}.type`} value={a.type} onChange={(e) => onChange({ type: e.target.value, raw: undefined })} error={error}>
        {!known && <option value={a.type}>{a.type}</option>}
        {Object.entries(ACTIONS).map(([k, text]) => (
          <option key={k} value={k}>
            {text}
          </option>
        ))}
      </SelectField>
      {detail}
      <GroupFinding error={error} name={at} shown={shown} />
      <div className="buttons">
        {onMoveUp && (
          <button type="button" onClick={onMoveUp}>
            Move action {index + 1} up
          </button>
        )}
        <button type="button" onClick={onRemove}>
          Remove action {index + 1}
        </button>
      </div>
    </fieldset>
  );
}
