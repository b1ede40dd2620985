// A workflow as its form holds it (every value a string, as inputs give them) and back to the contract's
// shapes: the form edits drafts, and only the request is the contract's WorkflowCreate/WorkflowUpdate.
import { fieldErrors, keepFindings } from '../../components/Form.tsx';
import type { Schemas } from '../../lib/api.ts';

export type Trigger = Schemas['WorkflowTrigger']['type'];
export type Operator = Schemas['WorkflowConditionOperator'];
export type ActionType = Schemas['WorkflowAction']['type'];

export const TRIGGERS: Record<Trigger, string> = {
  'conversation.created': 'A conversation starts',
  'message.created': 'A message is written',
  'conversation.idle': 'A conversation waits without an answer',
  'conversation.closed': 'A conversation is closed',
};

/** The condition's field that names a contact attribute: its key is typed beside it. */
export const ATTRIBUTE = 'contact.custom_attributes';

export const FIELDS: Record<string, string> = {
  'conversation.widget_id': 'Widget',
  'conversation.department_id': 'Department',
  'conversation.priority': 'Priority',
  'conversation.status': 'Status',
  'conversation.assigned': 'Assigned to someone',
  'conversation.business_hours': 'Business hours',
  'conversation.labels': 'Labels',
  'contact.email': "Contact's e-mail",
  [ATTRIBUTE]: "Contact's attribute",
  'message.content': "Message's text",
  'message.sender_type': "Message's author",
};

export const OPERATORS: Record<Operator, string> = {
  equals: 'is',
  not_equals: 'is not',
  in: 'is one of',
  not_in: 'is none of',
  contains: 'contains',
  not_contains: 'does not contain',
  is_set: 'is set',
  is_not_set: 'is not set',
};

/** The operators a field takes (the service refuses the others). */
export function operatorsOf(field: string): Operator[] {
  if (field === 'conversation.labels') return ['contains', 'not_contains', 'is_set', 'is_not_set'];
  if (field === 'conversation.assigned') return ['equals', 'not_equals'];
  return Object.keys(OPERATORS) as Operator[];
}

export const takesNoValue = (operator: Operator) => operator === 'is_set' || operator === 'is_not_set';
export const takesList = (operator: Operator) => operator === 'in' || operator === 'not_in';

export const ACTIONS: Record<ActionType, string> = {
  send_message: 'Send a message to the visitor',
  set_priority: 'Set the priority',
  transfer: 'Transfer to a department',
  add_label: 'Add a label',
  remove_label: 'Remove a label',
  close: 'Close the conversation',
  skip_survey: 'Close without a satisfaction survey',
  send_transcript: 'Mail the transcript',
  webhook: 'Post the event to a URL',
};

/** The fields each kind of action takes besides its `type`. */
export const ACTION_FIELDS: Record<ActionType, string[]> = {
  send_message: ['content'],
  set_priority: ['priority'],
  transfer: ['department_id'],
  add_label: ['label_id'],
  remove_label: ['label_id'],
  close: [],
  skip_survey: [],
  send_transcript: ['to'],
  webhook: ['url'],
};

const BRANCH_NOISE = ['must be equal to constant', 'must NOT have additional properties', 'must match exactly one schema in oneOf'];

/**
 * The findings about a oneOf item (an action, the trigger) that concern the kind the form chose, whose
 * other `fields` it shows. The contract's validator reports every branch of a oneOf: `type` "must be
 * equal to constant" for each other kind, the other kinds' required fields, "must NOT have additional
 * properties" for the chosen kind's own fields; they would bury the one finding that matters. When
 * nothing is left the findings stay as they were, so that none is lost.
 */
export function branchFindings(error: unknown, at: string, fields: string[]): unknown {
  const about = (name: string) => name === at || name.startsWith(`${at}.`);
  const kept = keepFindings(error, (name, message) => {
    if (!about(name)) return true;
    const rest = name.slice(at.length + 1);
    if (rest !== '' && !fields.includes(rest.split('.')[0]!)) return false;
    if (BRANCH_NOISE.some((noise) => message.startsWith(noise))) return false;
    const required = /^must have required property '(.+)'$/.exec(message);
    return !required || fields.includes(required[1]!);
  });
  const count = (e: unknown) => [...fieldErrors(e).keys()].filter(about).length;
  return count(kept) === 0 && count(error) > 0 ? error : kept;
}

export interface ConditionDraft {
  key: number;
  /** A key of FIELDS. */
  field: string;
  /** The attribute's key, for ATTRIBUTE. */
  attribute: string;
  operator: Operator;
  /** One value (a choice, or text; for a list, text separated by commas). */
  value: string;
  /** A list's values, where the field has choices. */
  values: string[];
}

export interface ActionDraft {
  key: number;
  type: string;
  content: string;
  priority: string;
  department_id: string;
  label_id: string;
  to: string;
  url: string;
  /** An action of a type this app does not know: kept as it is. */
  raw?: Schemas['WorkflowAction'];
}

export interface WorkflowDraft {
  name: string;
  trigger: Trigger;
  minutes: string;
  conditions: ConditionDraft[];
  actions: ActionDraft[];
}

let nextKey = 1;
const key = () => nextKey++;

export const newCondition = (): ConditionDraft => ({ key: key(), field: 'conversation.priority', attribute: '', operator: 'equals', value: '', values: [] });
export const newAction = (type = 'send_message'): ActionDraft => ({ key: key(), type, content: '', priority: 'high', department_id: '', label_id: '', to: '', url: '' });
export const newWorkflow = (): WorkflowDraft => ({ name: '', trigger: 'conversation.created', minutes: '15', conditions: [], actions: [newAction()] });

function conditionDraft(c: Schemas['WorkflowCondition']): ConditionDraft {
  const attribute = c.field.startsWith(`${ATTRIBUTE}.`) ? c.field.slice(ATTRIBUTE.length + 1) : '';
  const list = Array.isArray(c.value) ? c.value.map(String) : [];
  const one = c.value === undefined || Array.isArray(c.value) ? '' : String(c.value);
  return { key: key(), field: attribute ? ATTRIBUTE : c.field, attribute, operator: c.operator, value: Array.isArray(c.value) ? list.join(', ') : one, values: list };
}

function actionDraft(a: Schemas['WorkflowAction']): ActionDraft {
  const d = newAction(a.type);
  switch (a.type) {
    case 'send_message':
      return { ...d, content: a.content };
    case 'set_priority':
      return { ...d, priority: a.priority };
    case 'transfer':
      return { ...d, department_id: a.department_id };
    case 'add_label':
    case 'remove_label':
      return { ...d, label_id: a.label_id };
    case 'send_transcript':
      return { ...d, to: a.to ?? '' };
    case 'webhook':
      return { ...d, url: a.url };
    case 'close':
    case 'skip_survey':
      return d;
    default:
      return { ...d, raw: a };
  }
}

export function workflowDraft(w: Schemas['Workflow']): WorkflowDraft {
  return {
    name: w.name,
    trigger: w.trigger.type,
    minutes: w.trigger.type === 'conversation.idle' ? String(w.trigger.minutes) : '15',
    conditions: (w.conditions ?? []).map(conditionDraft),
    actions: w.actions.map(actionDraft),
  };
}

/** The fields whose values are chosen from a list (the rest are typed). */
export const hasChoices = (field: string) => !['contact.email', ATTRIBUTE, 'message.content'].includes(field);

function conditionOf(d: ConditionDraft): Schemas['WorkflowCondition'] {
  const field = d.field === ATTRIBUTE ? `${ATTRIBUTE}.${d.attribute.trim()}` : d.field;
  const operator = d.operator;
  if (takesNoValue(operator)) return { field, operator };
  if (takesList(operator)) {
    const values = hasChoices(d.field) ? d.values : d.value.split(',').map((v) => v.trim()).filter(Boolean);
    return { field, operator, value: values };
  }
  if (d.field === 'conversation.assigned') return { field, operator, value: d.value === 'true' };
  return { field, operator, value: hasChoices(d.field) ? d.value : d.value.trim() };
}

function actionOf(d: ActionDraft): Schemas['WorkflowAction'] {
  switch (d.type) {
    case 'send_message':
      return { type: 'send_message', content: d.content };
    case 'set_priority':
      return { type: 'set_priority', priority: d.priority as Schemas['Priority'] };
    case 'transfer':
      return { type: 'transfer', department_id: d.department_id };
    case 'add_label':
      return { type: 'add_label', label_id: d.label_id };
    case 'remove_label':
      return { type: 'remove_label', label_id: d.label_id };
    case 'send_transcript':
      return d.to.trim() ? { type: 'send_transcript', to: d.to.trim() } : { type: 'send_transcript' };
    case 'webhook':
      return { type: 'webhook', url: d.url.trim() };
    case 'close':
      return { type: 'close' };
    case 'skip_survey':
      return { type: 'skip_survey' };
    default:
      return d.raw ?? ({ type: d.type } as Schemas['WorkflowAction']);
  }
}

/** The request body of a draft: the same for a new workflow and for a change of every part. */
export function workflowOf(d: WorkflowDraft): Schemas['WorkflowCreate'] & Schemas['WorkflowUpdate'] {
  const trigger: Schemas['WorkflowTrigger'] = d.trigger === 'conversation.idle' ? { type: d.trigger, minutes: Number(d.minutes) } : { type: d.trigger };
  return { name: d.name.trim(), trigger, conditions: d.conditions.map(conditionOf), actions: d.actions.map(actionOf) };
}

/** A condition in words, for the workflow's card. */
export function describeCondition(c: Schemas['WorkflowCondition'], nameOf: (field: string, value: string) => string): string {
  const attribute = c.field.startsWith(`${ATTRIBUTE}.`) ? c.field.slice(ATTRIBUTE.length + 1) : undefined;
  const field = attribute ? `${FIELDS[ATTRIBUTE]} ${attribute}` : (FIELDS[c.field] ?? c.field);
  const values = c.value === undefined ? '' : (Array.isArray(c.value) ? c.value : [c.value]).map((v) => nameOf(c.field, String(v))).join(', ');
  return `${field} ${OPERATORS[c.operator] ?? c.operator}${values ? ` ${values}` : ''}`;
}
