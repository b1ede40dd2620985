// Form fields that show the service's own validation message beside the field it is about: a refused
// request's problem+json `errors` name each field by a JSON pointer (`/body/domain`), which a field
// matches by its `name` (`domain`, or `settings.color` for `/body/settings/color`).
import { type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes, useId, useState } from 'react';
import { describeError, isProblem } from '../lib/api.ts';

/** A finding's field name: `/body/settings/color` → `settings.color`. */
const fieldName = (path: string) => path.replace(/^\/(body|query|path)\//, '').replaceAll('/', '.');

/** The problem's field findings, by field name (`/body/settings/color` → `settings.color`). */
export function fieldErrors(error: unknown): Map<string, string> {
  const found = new Map<string, string>();
  if (!isProblem(error)) return found;
  for (const e of error.errors ?? []) {
    const name = fieldName(e.path);
    if (!found.has(name)) found.set(name, e.message);
  }
  return found;
}

/** The problem with only the findings `keep` accepts (by field name and message); anything else as it is. */
export function keepFindings(error: unknown, keep: (name: string, message: string) => boolean): unknown {
  if (!isProblem(error) || !error.errors) return error;
  return { ...error, errors: error.errors.filter((e) => keep(fieldName(e.path), e.message)) };
}

interface FieldProps {
  label: string;
  name: string;
  /** The mutation's error: the finding about this field shows under it. */
  error?: unknown;
  hint?: ReactNode;
  /** Findings further down count too (`settings` shows `settings.color`'s). */
  nested?: boolean;
}

function findingFor(error: unknown, name: string, nested?: boolean): string | undefined {
  const errors = fieldErrors(error);
  if (errors.has(name)) return errors.get(name);
  if (nested) for (const [key, message] of errors) if (key.startsWith(`${name}.`)) return message;
  return undefined;
}

function FieldFrame({ id, label, hint, finding, children }: { id: string; label: string; hint?: ReactNode; finding?: string | undefined; children: ReactNode }) {
  return (
    <div className="field" data-invalid={finding ? 'true' : undefined}>
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {children}
      {finding && (
        <p className="error field-error" id={`${id}-error`} role="alert">
          {finding}
        </p>
      )}
    </div>
  );
}

const describedBy = (id: string, hint: unknown, finding: unknown) => [hint ? `${id}-hint` : '', finding ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

export function Field({ label, name, error, hint, nested, ...input }: FieldProps & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  const finding = findingFor(error, name, nested);
  return (
    <FieldFrame id={id} label={label} hint={hint} finding={finding}>
      <input id={id} name={name} aria-invalid={finding ? true : undefined} aria-describedby={describedBy(id, hint, finding)} {...input} />
    </FieldFrame>
  );
}

export function TextAreaField({ label, name, error, hint, nested, ...input }: FieldProps & TextareaHTMLAttributes<HTMLTextAreaElement>) {
  const id = useId();
  const finding = findingFor(error, name, nested);
  return (
    <FieldFrame id={id} label={label} hint={hint} finding={finding}>
      <textarea id={id} name={name} aria-invalid={finding ? true : undefined} aria-describedby={describedBy(id, hint, finding)} {...input} />
    </FieldFrame>
  );
}

export function SelectField({ label, name, error, hint, nested, children, ...input }: FieldProps & SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId();
  const finding = findingFor(error, name, nested);
  return (
    <FieldFrame id={id} label={label} hint={hint} finding={finding}>
      <select id={id} name={name} aria-invalid={finding ? true : undefined} aria-describedby={describedBy(id, hint, finding)} {...input}>
        {children}
      </select>
    </FieldFrame>
  );
}

/**
 * The findings about a group of fields (`conditions.0`, a fieldset of one condition) that none of its
 * own fields (`shown`, each with what lies under it) shows: a finding about the whole item, or about a
 * part the form has no field for.
 */
export function GroupFinding({ error, name, shown }: { error: unknown; name: string; shown: string[] }) {
  const under = (key: string, field: string) => key === field || key.startsWith(`${field}.`);
  const rest = [...fieldErrors(error)].filter(([key]) => under(key, name) && !shown.some((field) => under(key, field)));
  if (rest.length === 0) return null;
  return (
    <p className="error field-error" role="alert">
      {rest.map(([key, message]) => (key === name ? message : `${key.slice(name.length + 1).replaceAll('.', ' ')}: ${message}`)).join('; ')}
    </p>
  );
}

/**
 * What a form's fields do not show: the error in words, unless every finding it carries sits beside one
 * of the `fields` this form has.
 */
export function FormError({ error, fields }: { error: unknown; fields: string[] }) {
  if (!error) return null;
  const findings = fieldErrors(error);
  const placed = (key: string) => fields.some((f) => key === f || key.startsWith(`${f}.`));
  if (findings.size > 0) {
    const rest = [...findings].filter(([key]) => !placed(key));
    if (rest.length === 0) return null;
    return (
      <p className="error" role="alert">
        {rest.map(([key, message]) => `${key}: ${message}`).join('; ')}
      </p>
    );
  }
  return (
    <p className="error" role="alert">
      {describeError(error)}
    </p>
  );
}

/** A secret the service shows once: said so, and a button that copies it. */
export function ShownOnce({ label, value, onDone }: { label: string; value: string; onDone?: () => void }) {
  return (
    <div className="shown-once" role="status">
      <p>
        <strong>{label}</strong> It is shown only now: copy it and keep it somewhere safe.
      </p>
      <Copyable value={value} label={label} />
      {onDone && (
        <button type="button" onClick={onDone}>
          Done
        </button>
      )}
    </div>
  );
}

/** Text to copy: selectable, with a button that puts it on the clipboard and says so. */
export function Copyable({ value, label, multiline }: { value: string; label: string; multiline?: boolean }) {
  const id = useId();
  return (
    <div className="copyable">
      {multiline ? (
        <pre id={id} tabIndex={0} aria-label={label}>
          <code>{value}</code>
        </pre>
      ) : (
        <code id={id} aria-label={label}>
          {value}
        </code>
      )}
      <CopyButton value={value} label={label} />
    </div>
  );
}

function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      setCopied(false);
    }
  };
  return (
    <button type="button" onClick={() => void copy()}>
      {copied ? 'Copied' : 'Copy'}
      <span className="visually-hidden"> {label.toLowerCase()}</span>
    </button>
  );
}
