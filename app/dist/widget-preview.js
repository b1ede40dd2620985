/* global window, document, location, URL, URLSearchParams, Response, setTimeout, localStorage, HTMLElement*/
// The widget's preview in the team app: the real bubble (the service's /widget.js), fed by this page
// instead of the service. The session it starts carries the settings in this page's address, so the
// app shows unsaved changes as visitors will see them; what a visitor writes stays in this page.
const params = new URLSearchParams(location.search);
const settings = {};
for (const key of ['color', 'greeting', 'position', 'away_message']) {
  const value = params.get(key);
  if (value) settings[key] = value;
}
const away = params.get('away') === '1';
const now = () => new Date().toISOString();
const conversationId = 'conv_00000000-0000-7000-8000-000000000001';
const messages = [];
let conversation;

const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
const page = (data) => ({ data, pagination: { total: data.length, limit: 100, offset: 0 } });
const message = (content) => ({
  id: `msg_00000000-0000-7000-8000-${String(messages.length + 1).padStart(12, '0')}`,
  conversation_id: conversationId,
  sender_type: 'visitor',
  sender_id: 'vis_00000000-0000-7000-8000-000000000001',
  type: 'text',
  content,
  internal: false,
  attachments: [],
  created_at: now(),
});

window.fetch = async (input, init = {}) => {
  const url = new URL(typeof input === 'string' ? input : input.url, location.href);
  const method = (init.method ?? 'GET').toUpperCase();
  const path = url.pathname.replace(/^.*?\/v1\//, '/v1/');
  const body = typeof init.body === 'string' ? JSON.parse(init.body) : {};
  if (path === '/v1/widget/sessions') {
    return json({
      visitor_id: 'vis_00000000-0000-7000-8000-000000000001',
      visitor_token: 'preview',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      widget: { id: 'wgt_00000000-0000-7000-8000-000000000001', settings, team_available: !away, open: true, next_open_at: null },
    }, 201);
  }
  if (path === '/v1/widget/conversations' && method === 'GET') return json(page(conversation ? [conversation] : []));
  if (path === '/v1/widget/conversations' && method === 'POST') {
    messages.push(message(body.content ?? ''));
    conversation = { id: conversationId, status: 'open', last_message: body.content ?? '', last_message_at: now(), created_at: now(), survey: null };
    return json(conversation, 201);
  }
  if (path === `/v1/widget/conversations/${conversationId}/messages` && method === 'GET') return json(page([...messages].reverse()));
  if (path === `/v1/widget/conversations/${conversationId}/messages` && method === 'POST') {
    const m = message(body.content ?? '');
    messages.push(m);
    return json(m, 201);
  }
  return json({ type: 'about:blank', title: 'Not Found', status: 404, code: 'ERR_NOT_FOUND', detail: 'Not in the preview', request_id: 'preview' }, 404);
};

// No socket in a preview: one that says welcome and then nothing.
window.WebSocket = class PreviewSocket {
  static OPEN = 1;
  readyState = 0;
  constructor() {
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.({});
      this.onmessage?.({ data: JSON.stringify({ type: 'welcome', connection_id: 'preview' }) });
    });
  }
  send() {}
  close() {
    this.readyState = 3;
  }
};

try {
  localStorage.removeItem('chat-widget:preview');
} catch {
  // Storage refused: nothing kept anyway.
}
// A preview never takes the focus from the form beside it (the bubble focuses its input as it opens).
HTMLElement.prototype.focus = function focus() {};
const script = document.createElement('script');
script.src = '/widget.js';
script.async = true;
script.dataset.widgetId = 'preview';
if (params.get('open') === '1') script.addEventListener('load', () => window.ChatWidget?.open());
document.body.append(script);
