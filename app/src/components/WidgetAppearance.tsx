// The chat bubble's look and words, with a live preview of the real bubble (the service's /widget.js in
// a frame, fed these settings before they are saved). Used by the first-run guide and the widget settings.
import { useEffect, useState } from 'react';
import type { Schemas } from '../lib/api.ts';
import { Field, SelectField, TextAreaField } from './Form.tsx';

export type Appearance = Pick<Schemas['WidgetSettings'], 'color' | 'greeting' | 'position' | 'away_message'>;

export const DEFAULT_APPEARANCE: Required<Appearance> = {
  color: '#0b5cad',
  greeting: 'Hi! How can we help?',
  position: 'bottom-right',
  away_message: 'We are away right now. Leave a message and we will get back to you by e-mail.',
};

export function AppearanceFields({ value, onChange, error }: { value: Appearance; onChange: (next: Appearance) => void; error: unknown }) {
  const set = (patch: Appearance) => onChange({ ...value, ...patch });
  return (
    <>
      <Field label="Colour" name="settings.color" type="color" value={value.color ?? DEFAULT_APPEARANCE.color} onChange={(e) => set({ color: e.target.value })} error={error} />
      <TextAreaField
        label="Greeting"
        name="settings.greeting"
        rows={2}
        maxLength={500}
        value={value.greeting ?? ''}
        onChange={(e) => set({ greeting: e.target.value })}
        hint="The first thing a visitor reads when they open the chat."
        error={error}
      />
      <SelectField label="Position" name="settings.position" value={value.position ?? 'bottom-right'} onChange={(e) => set({ position: e.target.value as Appearance['position'] })} error={error}>
        <option value="bottom-right">Bottom right</option>
        <option value="bottom-left">Bottom left</option>
      </SelectField>
      <TextAreaField
        label="Away message"
        name="settings.away_message"
        rows={2}
        maxLength={500}
        value={value.away_message ?? ''}
        onChange={(e) => set({ away_message: e.target.value })}
        hint="Shown while nobody on the team is online; visitors can still write."
        error={error}
      />
    </>
  );
}

/** The real bubble, open, with these settings; "as away" shows the away message. Follows edits after a pause. */
export function WidgetPreview({ value }: { value: Appearance }) {
  const [away, setAway] = useState(false);
  const query = new URLSearchParams({ open: '1', ...(away ? { away: '1' } : {}) });
  for (const [key, v] of Object.entries(value)) if (typeof v === 'string' && v) query.set(key, v);
  const wanted = `${import.meta.env.BASE_URL}widget-preview.html?${query}`;
  const [src, setSrc] = useState(wanted);
  useEffect(() => {
    const timer = setTimeout(() => setSrc(wanted), 400);
    return () => clearTimeout(timer);
  }, [wanted]);
  return (
    <figure className="preview">
      <iframe title="Preview of your chat bubble" src={src} />
      <figcaption>
        <label>
          <input type="checkbox" checked={away} onChange={(e) => setAway(e.target.checked)} /> Preview while the team is away
        </label>
      </figcaption>
    </figure>
  );
}

/** Only what differs from nothing: empty fields are left to the widget's defaults. */
export function appearanceSettings(value: Appearance): Appearance {
  const out: Appearance = {};
  if (value.color) out.color = value.color;
  if (value.greeting?.trim()) out.greeting = value.greeting.trim();
  if (value.position) out.position = value.position;
  if (value.away_message?.trim()) out.away_message = value.away_message.trim();
  return out;
}

/** The one line a website needs, from this service. */
export const embedTag = (widgetId: string) => `<script src="${location.origin}/widget.js" data-widget-id="${widgetId}" async></script>`;
