import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef } from 'react';
import { Link } from 'react-router';
import { fetchClient, isProblem, session } from '../../../lib/api.ts';
import { useSession } from '../../../lib/hooks.ts';
import { ErrorText } from '../../../components/ErrorText.tsx';

function loginError(error: unknown): string | unknown {
  if (isProblem(error) && error.status === 401) return 'That e-mail address and password do not match an account.';
  if (isProblem(error) && error.status === 403) return 'This account cannot log in yet: confirm your e-mail address first, or ask your team.';
  return error;
}

export function LoginPage() {
  const { endedBecause } = useSession();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Log in · Customer Chat';
    heading.current?.focus();
  }, []);
  const login = useMutation({
    mutationFn: async (body: { email: string; password: string }) => {
      const { data, error } = await fetchClient.POST('/v1/auth/login', { body });
      if (error) throw error;
      return data;
    },
    onSuccess: (tokens) => session.start(tokens),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    login.mutate({ email: String(form.get('email')), password: String(form.get('password')) });
  };
  return (
    <main className="login">
      <form onSubmit={submit} aria-labelledby="login-heading" aria-describedby={endedBecause ? 'login-ended' : undefined}>
        <h1 id="login-heading" ref={heading} tabIndex={-1}>
          Log in to your inbox
        </h1>
        {endedBecause && !login.isPending && (
          <p className="notice" id="login-ended" role="status">
            {endedBecause}
          </p>
        )}
        <label htmlFor="login-email">E-mail</label>
        <input id="login-email" name="email" type="email" autoComplete="username" required />
        <label htmlFor="login-password">Password</label>
        <input id="login-password" name="password" type="password" autoComplete="current-password" required />
        <ErrorText error={login.error ? loginError(login.error) : undefined} />
        <button type="submit" className="primary" disabled={login.isPending}>
          {login.isPending ? 'Logging in…' : 'Log in'}
        </button>
        <p className="muted">
          <Link to="/forgot-password">Forgot your password?</Link> · New here? <Link to="/signup">Create a workspace</Link>
        </p>
      </form>
    </main>
  );
}
