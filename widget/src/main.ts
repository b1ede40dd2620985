// The chat bubble, embedded with one tag:
//   <script src="https://chat.example.com/widget.js" data-widget-id="wgt_…" async></script>
// It talks to the service that served it, through the public widget API and the visitor socket only.
import type { S } from './api.ts';
import { Chat } from './chat.ts';

type QueuedCall = ['identify', S['WidgetUser']] | ['open'] | ['close'];

interface ChatWidgetApi {
  identify(user: S['WidgetUser']): Promise<void>;
  open(): void;
  close(): void;
}

declare global {
  interface Window {
    /** Before the script loads, a page may leave calls here: `window.ChatWidget = { q: [['identify', {...}]] }`. */
    ChatWidget?: Partial<ChatWidgetApi> & { q?: QueuedCall[] };
  }
}

function boot(script: HTMLScriptElement): void {
  const widgetId = script.dataset.widgetId;
  if (!widgetId) {
    console.error('Chat widget: the script tag needs data-widget-id="wgt_…"');
    return;
  }
  // The API lives where the script came from, unless the tag names another address.
  const apiBase = (script.dataset.apiUrl ?? `${new URL(script.src).origin}/api`).replace(/\/$/, '');
  const { userEmail, userHash, userName } = script.dataset;
  const user: S['WidgetUser'] | undefined = userEmail && userHash ? { email: userEmail, user_hash: userHash, ...(userName ? { name: userName } : {}) } : undefined;
  const queued = window.ChatWidget?.q ?? [];
  // Identity left in the queue counts from the first session on: no anonymous session first.
  const identity = queued.find((call): call is ['identify', S['WidgetUser']] => call[0] === 'identify');
  const chat = new Chat({ widgetId, apiBase, user: identity?.[1] ?? user });
  const api: ChatWidgetApi = {
    identify: (u) => chat.identify(u),
    open: () => chat.open(),
    close: () => chat.close(),
  };
  window.ChatWidget = api;
  chat.mount();
  for (const call of queued) if (call[0] !== 'identify') api[call[0]]();
}

// `currentScript` is set while an async script runs (not in a module, not later in a callback).
const script = document.currentScript as HTMLScriptElement | null;
if (script) {
  if (document.body) boot(script);
  else addEventListener('DOMContentLoaded', () => boot(script), { once: true });
}
