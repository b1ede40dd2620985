import { readFileSync } from 'node:fs';
import express, { type Response, type Router } from 'express';

// The pages behind the mail links (APP_URL/verify-email?token=…, /reset-password, /accept-invitation)
// when APP_URL is the service itself: a form each, posting the token to the API from a script of this
// origin. Nothing on them depends on the token, so they are the same static HTML for every link.

interface Field {
  name: string;
  label: string;
  type: 'text' | 'password';
  autocomplete: string;
  hint?: string;
  minLength?: number;
  maxLength: number;
}

interface MailPage {
  path: string;
  title: string;
  intro: string;
  /** The API operation the form posts to, under the contract's base path. */
  endpoint: string;
  fields: Field[];
  submit: string;
  done: string;
}

// Password bounds as the contract's Password schema has them (10 to 128 characters).
const newPassword: Field = {
  name: 'password',
  label: 'New password',
  type: 'password',
  autocomplete: 'new-password',
  hint: '10 to 128 characters.',
  minLength: 10,
  maxLength: 128,
};

export const MAIL_PAGES: MailPage[] = [
  {
    path: '/verify-email',
    title: 'Confirm your e-mail address',
    // A button, not a request on load: mail scanners open links, and would use the single-use token up.
    intro: 'Confirm that this e-mail address is yours.',
    endpoint: '/v1/auth/verify-email',
    fields: [],
    submit: 'Confirm my address',
    done: 'Your e-mail address is confirmed. You can close this page.',
  },
  {
    path: '/reset-password',
    title: 'Set a new password',
    intro: 'Choose a new password for your account. Every device signed in to it will be signed out.',
    endpoint: '/v1/auth/reset-password',
    fields: [newPassword],
    submit: 'Set password',
    done: 'Your password is changed. Log in with the new one.',
  },
  {
    path: '/accept-invitation',
    title: 'Join your team',
    intro: 'You are invited to a team. Tell us your name and choose a password to create your account.',
    endpoint: '/v1/auth/accept-invitation',
    fields: [{ name: 'name', label: 'Your name', type: 'text', autocomplete: 'name', maxLength: 200, minLength: 1 }, { ...newPassword, label: 'Password' }],
    submit: 'Join the team',
    done: 'You have joined the team. Log in with your e-mail address and this password.',
  },
];

const asset = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8');

export function mailPagesRouter(basePath: string): Router {
  const router = express.Router();
  const script = asset('mail-pages.js');
  const style = asset('mail-pages.css');
  for (const page of MAIL_PAGES) {
    const html = renderPage(page, basePath);
    router.get(page.path, (_req, res) => {
      pageHeaders(res);
      res.type('text/html').send(html);
    });
  }
  router.get('/pages/mail-pages.js', (_req, res) => {
    res.type('text/javascript').set('Cache-Control', 'no-cache').send(script);
  });
  router.get('/pages/mail-pages.css', (_req, res) => {
    res.type('text/css').set('Cache-Control', 'no-cache').send(style);
  });
  return router;
}

function pageHeaders(res: Response): void {
  res.set({
    // The token is in the address: no Referer carries it elsewhere, no cache keeps the page.
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
  });
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function renderField(field: Field): string {
  const id = `field-${field.name}`;
  const hint = field.hint ? `\n      <p class="hint" id="${id}-hint">${escapeHtml(field.hint)}</p>` : '';
  const described = [field.hint ? `${id}-hint` : '', `${id}-error`].filter(Boolean).join(' ');
  return `
    <div class="field">
      <label for="${id}">${escapeHtml(field.label)}</label>${hint}
      <input id="${id}" name="${field.name}" type="${field.type}" autocomplete="${field.autocomplete}" required${field.minLength ? ` minlength="${field.minLength}"` : ''} maxlength="${field.maxLength}" aria-describedby="${described}">
      <p class="error" id="${id}-error" hidden></p>
    </div>`;
}

function renderPage(page: MailPage, basePath: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>${escapeHtml(page.title)} · Customer Chat</title>
  <link rel="stylesheet" href="/pages/mail-pages.css">
  <script src="/pages/mail-pages.js" defer></script>
</head>
<body>
  <main>
    <h1>${escapeHtml(page.title)}</h1>
    <p>${escapeHtml(page.intro)}</p>
    <noscript><p>This page needs JavaScript to send the form.</p></noscript>
    <form id="mail-form" data-endpoint="${escapeHtml(basePath + page.endpoint)}" data-done="${escapeHtml(page.done)}" novalidate hidden>${page.fields.map(renderField).join('')}
      <button type="submit">${escapeHtml(page.submit)}</button>
    </form>
    <div id="outcome" role="status" aria-live="polite" tabindex="-1"></div>
  </main>
</body>
</html>
`;
}
