/* global document, fetch, location, URLSearchParams */
// The mail-link pages' script (src/pages/mail-pages.ts): posts the link's token and the form's fields
// to the API as JSON, and says what happened in the status region, which screen readers announce.
'use strict';

const MESSAGES = {
  ERR_INVALID_TOKEN: 'This link has expired or was already used. Ask for a new one.',
  ERR_RATE_LIMITED: 'Too many attempts. Wait a minute, then try again.',
  ERR_UNAVAILABLE: 'The service is busy. Try again in a moment.',
};

document.addEventListener('DOMContentLoaded', () => {
  const form = document.getElementById('mail-form');
  const outcome = document.getElementById('outcome');
  const token = new URLSearchParams(location.search).get('token');

  const say = (text, kind) => {
    outcome.textContent = text;
    outcome.className = kind;
    outcome.focus();
  };
  const fieldOf = (name) => form.querySelector(`[name="${name}"]`);
  const clearErrors = () => {
    for (const input of form.querySelectorAll('input')) {
      input.removeAttribute('aria-invalid');
      const error = document.getElementById(`${input.id}-error`);
      error.hidden = true;
      error.textContent = '';
    }
  };
  const markInvalid = (input, message) => {
    input.setAttribute('aria-invalid', 'true');
    const error = document.getElementById(`${input.id}-error`);
    error.textContent = message;
    error.hidden = false;
  };

  if (!token) {
    say('This link is incomplete: open the whole link from the mail.', 'problem');
    return;
  }
  form.hidden = false;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    // The browser's own checks (required, length) first, in the page's words, before a round trip.
    const invalid = [...form.querySelectorAll('input')].filter((input) => !input.checkValidity());
    for (const input of invalid) markInvalid(input, input.validationMessage);
    if (invalid.length > 0) {
      say('Please correct the fields marked.', 'problem');
      invalid[0].focus();
      return;
    }
    const body = { token };
    for (const input of form.querySelectorAll('input')) body[input.name] = input.value;
    const button = form.querySelector('button');
    button.disabled = true;
    say('Sending…', '');
    try {
      const res = await fetch(form.dataset.endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, application/problem+json' },
        body: JSON.stringify(body),
      });
      if (res.ok) {
        form.hidden = true;
        say(form.dataset.done, 'success');
        return;
      }
      const problem = await res.json().catch(() => ({}));
      if (problem.code === 'ERR_VALIDATION' && Array.isArray(problem.errors)) {
        for (const { path, message } of problem.errors) {
          const input = fieldOf(String(path).replace(/^\/body\//, ''));
          if (input) markInvalid(input, `${input.labels[0].textContent} ${message}`);
        }
      }
      if (problem.code === 'ERR_INVALID_TOKEN') form.hidden = true;
      say(MESSAGES[problem.code] ?? problem.detail ?? `Something went wrong (${res.status}).`, 'problem');
    } catch {
      say('The service could not be reached. Check your connection and try again.', 'problem');
    } finally {
      button.disabled = false;
    }
  });
});
