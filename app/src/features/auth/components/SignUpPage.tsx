import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef } from 'react';
import { Link } from 'react-router';
import { Field, FormError } from '../../../components/Form.tsx';
import { fetchClient, type Schemas, session } from '../../../lib/api.ts';

const timezone = () => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || undefined;
  } catch {
    return undefined;
  }
};

/** A new business: its workspace (the tenant) and its owner, logged in at once and sent to the guide. */
export function SignUpPage() {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Sign up · Customer Chat';
    heading.current?.focus();
  }, []);
  const register = useMutation({
    mutationFn: async (body: Schemas['RegisterRequest']) => {
      const { data, error } = await fetchClient.POST('/v1/auth/register', { body });
      if (error) throw error;
      return data;
    },
    // Logged in, the app's routes change: /signup then leads to the guide (app/routes.tsx).
    onSuccess: (answer) => session.start(answer),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const tz = timezone();
    register.mutate({
      name: String(form.get('name')),
      email: String(form.get('email')),
      password: String(form.get('password')),
      tenant_name: String(form.get('tenant_name')),
      ...(tz ? { timezone: tz } : {}),
    });
  };
  const error = register.error;
  return (
    <main className="login">
      <form onSubmit={submit} aria-labelledby="signup-heading" noValidate>
        <h1 id="signup-heading" ref={heading} tabIndex={-1}>
          Create your workspace
        </h1>
        <p className="muted">Chat with the visitors of your website. Free to start; set up in a few minutes.</p>
        <Field label="Your name" name="name" autoComplete="name" required maxLength={200} error={error} />
        <Field label="Work e-mail" name="email" type="email" autoComplete="username" required error={error} />
        <Field label="Password" name="password" type="password" autoComplete="new-password" required hint="10 to 128 characters." error={error} />
        <Field label="Company or workspace name" name="tenant_name" autoComplete="organization" required maxLength={200} error={error} />
        <FormError error={error} fields={['name', 'email', 'password', 'tenant_name', 'timezone']} />
        <button type="submit" className="primary" disabled={register.isPending}>
          {register.isPending ? 'Creating…' : 'Create workspace'}
        </button>
        <p className="muted">
          Already have an account? <Link to="/login">Log in</Link>
        </p>
      </form>
    </main>
  );
}
