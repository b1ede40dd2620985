// The API reference's try-it panel, in the browser (served by src/http/docs.ts, its table of operations made
// by src/http/try-it.ts). On each operation's page: the path, query and header parameters, a JSON body
// prefilled from the operation's example (or a form's fields), the access token of a login made with the
// panel's own form (kept in sessionStorage, for this tab only), and, once sent, the answer's status,
// headers and body. Every request goes to the service that serves the page: URLs are relative.
// Plain browser JavaScript with no dependency, loaded (deferred) after Redoc's bundle.
/* global document, sessionStorage, fetch, performance, requestAnimationFrame, FormData, MutationObserver, URLSearchParams, setTimeout */
(() => {
  const script = document.currentScript;
  const api = script?.dataset.api ?? '/api';
  const tableUrl = script?.dataset.operations;
  const docsBase = script?.dataset.docs ?? '/api/docs';
  const TOKEN_KEY = 'chat-reference.try-it.token';
  const EMAIL_KEY = 'chat-reference.try-it.email';
  if (!tableUrl) return;

  /** Elements: el('input', {name: 'x'}, child...). */
  const el = (tag, attributes = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes)) {
      if (v === undefined || v === false) continue;
      if (k === 'text') node.textContent = v;
      else node.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c) node.append(c);
    return node;
  };

  const style = el('style', {
    text: `
.try-it { box-sizing: border-box; margin: 8px 64px 40px; padding: 16px 24px; border: 1px solid #d0d7de; border-radius: 8px; background: #f6f8fa; font: 14px/1.4 system-ui, sans-serif; color: #1f2937; }
.try-it h2 { font-size: 18px; margin: 0 0 8px; }
.try-it h3 { font-size: 14px; margin: 16px 0 6px; }
.try-it code { font: 13px ui-monospace, monospace; }
.try-it label { display: grid; grid-template-columns: 180px 1fr; gap: 8px; align-items: center; margin: 4px 0; }
.try-it label span small { display: block; color: #57606a; font-weight: normal; }
.try-it input, .try-it textarea { font: 13px ui-monospace, monospace; padding: 4px 6px; border: 1px solid #d0d7de; border-radius: 4px; background: #fff; min-width: 0; }
.try-it textarea { width: 100%; box-sizing: border-box; min-height: 140px; }
.try-it button { font: inherit; padding: 5px 14px; margin: 8px 8px 0 0; border: 1px solid #1f6feb; border-radius: 4px; background: #2563eb; color: #fff; cursor: pointer; }
.try-it button.secondary { background: #fff; color: #1f2937; border-color: #d0d7de; }
.try-it .try-it-login { border-top: 1px solid #d0d7de; margin-top: 12px; }
.try-it pre { background: #fff; border: 1px solid #d0d7de; border-radius: 4px; padding: 8px; overflow: auto; max-height: 420px; font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.try-it .try-it-status { font-weight: 600; }
.try-it .try-it-problem { color: #b42318; }
`,
  });
  document.head.append(style);

  let table;

  const tokenOf = () => sessionStorage.getItem(TOKEN_KEY) ?? '';

  function loginForm() {
    const email = el('input', { type: 'email', name: 'email', autocomplete: 'username', required: true, value: sessionStorage.getItem(EMAIL_KEY) ?? '' });
    const password = el('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
    const status = el('p', { role: 'status' });
    const form = el(
      'form',
      { class: 'try-it-login', 'aria-label': 'Log in for try-it' },
      el('h3', { text: 'Log in' }),
      el('p', { text: `The access token of a login here fills the token field (POST ${api}/v1/auth/login on this service; kept for this tab only).` }),
      el('label', {}, el('span', { text: 'E-mail' }), email),
      el('label', {}, el('span', { text: 'Password' }), password),
      el('button', { type: 'submit', text: 'Log in' }),
      el('button', { type: 'button', class: 'secondary', 'data-action': 'logout', text: 'Forget the token' }),
      status,
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      status.textContent = 'Logging in…';
      try {
        const answer = await fetch(`${api}/v1/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify({ email: email.value, password: password.value }) });
        const body = await answer.json().catch(() => ({}));
        if (!answer.ok || typeof body.access_token !== 'string') {
          status.textContent = `Not logged in: ${answer.status} ${body.code ?? ''} ${body.detail ?? ''}`.trim();
          return;
        }
        sessionStorage.setItem(TOKEN_KEY, body.access_token);
        sessionStorage.setItem(EMAIL_KEY, email.value);
        for (const input of document.querySelectorAll('.try-it input[name="token"]')) input.value = body.access_token;
        password.value = '';
        status.textContent = `Logged in as ${email.value}: the token is filled in.`;
      } catch (error) {
        status.textContent = `Not logged in: ${error}`;
      }
    });
    form.querySelector('[data-action="logout"]').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      for (const input of document.querySelectorAll('.try-it input[name="token"]')) input.value = '';
      status.textContent = 'The token is forgotten.';
    });
    return form;
  }

  function field(label, input, hint) {
    return el('label', {}, el('span', { text: label }, hint ? el('small', { text: hint }) : null), input);
  }

  function panelFor(op) {
    const inputs = [];
    const section = el('section', { class: 'try-it', 'aria-label': `Try it: ${op.method} ${op.path}` }, el('h2', { text: 'Try it' }), el('p', {}, el('code', { text: `${op.method} ${api}${op.path}` })));
    const form = el('form', { class: 'try-it-request', 'aria-label': 'Request' });
    section.append(form);

    let token;
    if (op.auth === 'bearer') {
      token = el('input', { name: 'token', 'aria-label': 'Access token', value: tokenOf(), placeholder: 'log in below, or paste an access token' });
      form.append(field('Access token', token, 'Authorization: Bearer'));
    } else if (op.auth === 'visitor') {
      token = el('input', { name: 'visitor-token', 'aria-label': 'Visitor token', placeholder: 'the visitor_token of POST /v1/widget/sessions' });
      form.append(field('Visitor token', token, "the browser sends this page's Origin"));
    }

    for (const where of ['path', 'query', 'header']) {
      const ps = op.parameters.filter((p) => p.in === where);
      if (!ps.length) continue;
      form.append(el('h3', { text: where === 'path' ? 'Path' : where === 'query' ? 'Query' : 'Headers' }));
      for (const p of ps) {
        const input = el('input', { name: `${where}.${p.name}`, 'aria-label': p.name, required: p.required && where === 'path', placeholder: p.example ?? '', value: p.required && p.example !== undefined ? p.example : '' });
        inputs.push({ p, input });
        form.append(field(p.required ? `${p.name} *` : p.name, input, p.description));
      }
    }

    let body;
    const files = [];
    if (op.body?.type === 'json') {
      body = el('textarea', { name: 'body', 'aria-label': 'Body (JSON)', spellcheck: 'false' });
      body.value = op.body.example;
      form.append(el('h3', { text: 'Body (JSON)' }), body);
    } else if (op.body?.type === 'multipart') {
      form.append(el('h3', { text: 'Body (form)' }));
      for (const f of op.body.fields) {
        const input = f.file ? el('input', { type: 'file', name: f.name, 'aria-label': f.name, required: f.required }) : el('input', { name: f.name, 'aria-label': f.name, placeholder: f.example ?? '' });
        files.push({ f, input });
        form.append(field(f.required ? `${f.name} *` : f.name, input));
      }
    }

    const answer = el('div', { class: 'try-it-answer', 'aria-live': 'polite' });
    form.append(el('button', { type: 'submit', text: 'Send' }));
    section.append(answer);
    if (op.auth === 'bearer') section.append(loginForm());

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      answer.replaceChildren(el('p', { text: 'Sending…' }));
      const headers = { Accept: 'application/json' };
      if (token?.value) headers.Authorization = `Bearer ${token.value.trim()}`;
      let path = op.path;
      const query = new URLSearchParams();
      for (const { p, input } of inputs) {
        const value = input.value;
        if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(value));
        else if (value !== '' && p.in === 'query') query.append(p.name, value);
        else if (value !== '' && p.in === 'header') headers[p.name] = value;
      }
      let payload;
      if (op.body?.type === 'json') {
        const source = body.value.trim();
        if (source !== '') {
          try {
            payload = JSON.stringify(JSON.parse(source));
          } catch (error) {
            answer.replaceChildren(el('p', { class: 'try-it-problem', text: `The body is not JSON: ${error.message}` }));
            return;
          }
          headers['Content-Type'] = 'application/json';
        }
      } else if (op.body?.type === 'multipart') {
        payload = new FormData();
        for (const { f, input } of files) {
          if (f.file && input.files?.[0]) payload.append(f.name, input.files[0]);
          else if (!f.file && input.value !== '') payload.append(f.name, input.value);
        }
      }
      const search = query.toString();
      const url = `${api}${path}${search ? `?${search}` : ''}`;
      try {
        const started = performance.now();
        const response = await fetch(url, { method: op.method, headers, body: payload, credentials: 'same-origin' });
        const ms = Math.round(performance.now() - started);
        const type = response.headers.get('content-type') ?? '';
        let shown;
        if (/json/.test(type)) {
          const raw = await response.text();
          try {
            shown = JSON.stringify(JSON.parse(raw), null, 2);
          } catch {
            shown = raw;
          }
        } else if (op.binary || !/^text\//.test(type)) {
          shown = `(${(await response.blob()).size} bytes of ${type || 'unknown type'})`;
        } else {
          shown = await response.text();
        }
        const headerText = [...response.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
        answer.replaceChildren(
          el('p', { class: `try-it-status${response.ok ? '' : ' try-it-problem'}`, 'data-status': String(response.status), text: `${response.status} ${response.statusText} · ${op.method} ${url} · ${ms} ms` }),
          el('h3', { text: 'Headers' }),
          el('pre', { class: 'try-it-headers', text: headerText }),
          el('h3', { text: 'Body' }),
          el('pre', { class: 'try-it-body', text: shown }),
        );
      } catch (error) {
        answer.replaceChildren(el('p', { class: 'try-it-problem', text: `Not sent: ${error}` }));
      }
    });
    return section;
  }

  // Redoc lays every operation out in one scroll, each in an element whose id is its page's path (as the
  // server renders it; relative to the reference's base once rendered in the browser), and renders those
  // near the view. Each rendered operation gets its panel above its responses, once React has
  // hydrated it (a node added before would not match the server's markup); the panel is made once per
  // operation and put back whenever React renders the operation anew, with what was typed in it.
  const panels = new Map();
  const hydrated = (node) => Object.keys(node).some((k) => k.startsWith('__reactFiber$'));
  function attach() {
    if (!table) return;
    for (const [link, op] of table) {
      const section = document.getElementById(link.slice(docsBase.length + 1)) ?? document.getElementById(link);
      const row = section?.firstElementChild;
      const panel = panels.get(link);
      if (!row || !section.querySelector('[data-testid="middle-panel"]') || !hydrated(row)) {
        panel?.remove();
        continue;
      }
      // Between the request and the responses (after the operation's last row when it has no responses).
      const responses = [...section.children].find((child) => child !== panel && child.querySelector('[id$="/responses"]'));
      if (panel?.parentNode === section && (responses ? panel.nextElementSibling === responses : section.lastElementChild === panel)) continue;
      const made = panel ?? panelFor(op);
      panels.set(link, made);
      if (responses) responses.before(made);
      else section.append(made);
    }
  }
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      attach();
    });
  };
  const root = document.getElementById('redoc');
  if (root) new MutationObserver(soon).observe(root, { childList: true, subtree: true });
  // Hydration changes no node: look again until it has happened.
  let looks = 0;
  const untilHydrated = () => {
    attach();
    if (panels.size === 0 && looks++ < 600) setTimeout(untilHydrated, 50);
  };

  fetch(tableUrl, { credentials: 'same-origin' })
    .then((r) => r.json())
    .then((rows) => {
      table = new Map(rows.map((op) => [op.link, op]));
      untilHydrated();
    })
    .catch(() => {});
})();
