// The pages behind the mail links (APP_URL/verify-email?token=…, /reset-password, /accept-invitation)
// and the request for a reset mail. The token stays in the address: nothing posts it before the person
// presses the button (mail scanners open links, and would use a single-use token up).
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useRef } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { Field, FormError } from '../../../components/Form.tsx';
import { fetchClient, isProblem, session } from '../../../lib/api.ts';
import { useSession, useTeam } from '../../../lib/hooks.ts';
import { logout } from '../api.ts';

function linkError(error: unknown): unknown {
  // The token itself refused (used, expired, unknown): what to do next, not a field.
  if (isProblem(error) && error.code === 'ERR_INVALID_TOKEN') return 'This link is not valid any more (used already, expired, or cut short). Ask for a new one.';
  return error;
}

function Card({ title, children }: { title: string; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Customer Chat`;
    heading.current?.focus();
  }, [title]);
  return (
    <main className="login">
      <section className="card" aria-labelledby="card-heading">
        <h1 id="card-heading" ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {children}
      </section>
    </main>
  );
}

function Done({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

function NoToken() {
  return <p className="error">This page opens from the link in your mail; this address carries no token. Open the link again, or ask for a new mail.</p>;
}

/** Where a signed-in member goes on: owners and admins to the guide (only they may do its steps), agents to the inbox. */
function Onwards() {
  const { team, me } = useTeam();
  if (team.isPending) return null;
  return me?.role === 'owner' || me?.role === 'admin' ? (
    <Link className="button primary" to="/setup/workspace">
      Continue setting up
    </Link>
  ) : (
    <Link className="button primary" to="/inbox/mine">
      Go to the inbox
    </Link>
  );
}

export function VerifyEmailPage() {
  const [params] = useSearchParams();
  const token = params.get('token');
  const { signedIn } = useSession();
  const verify = useMutation({
    mutationFn: async () => {
      const { data, error } = await fetchClient.POST('/v1/auth/verify-email', { body: { token: token ?? '' } });
      if (error) throw error;
      return data;
    },
  });
  return (
    <Card title="Confirm your e-mail address">
      {!token ? (
        <NoToken />
      ) : verify.isSuccess ? (
        <>
          <Done>Your e-mail address is confirmed.</Done>
          {signedIn ? (
            <Onwards />
          ) : (
            <Link className="button primary" to="/login">
              Log in
            </Link>
          )}
        </>
      ) : (
        <>
          <p>Confirm that this e-mail address is yours.</p>
          <FormError error={verify.error ? linkError(verify.error) : undefined} fields={[]} />
          <button type="button" className="primary" disabled={verify.isPending} onClick={() => verify.mutate()}>
            Confirm my address
          </button>
        </>
      )}
    </Card>
  );
}

export function ResetPasswordPage() {
  const [params] = useSearchParams();
  const token = params.get('token');
  const reset = useMutation({
    mutationFn: async (password: string) => {
      const { data, error } = await fetchClient.POST('/v1/auth/reset-password', { body: { token: token ?? '', password } });
      if (error) throw error;
      return data;
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    reset.mutate(String(new FormData(e.currentTarget).get('password')));
  };
  return (
    <Card title="Set a new password">
      {!token ? (
        <NoToken />
      ) : reset.isSuccess ? (
        <>
          <Done>Your password is changed. Log in with the new one.</Done>
          <Link className="button primary" to="/login">
            Log in
          </Link>
        </>
      ) : (
        <form onSubmit={submit} noValidate>
          <p>Choose a new password for your account. Every device signed in to it will be signed out.</p>
          <Field label="New password" name="password" type="password" autoComplete="new-password" required hint="10 to 128 characters." error={reset.error} />
          <FormError error={reset.error ? linkError(reset.error) : undefined} fields={['password']} />
          <button type="submit" className="primary" disabled={reset.isPending}>
            Set password
          </button>
        </form>
      )}
    </Card>
  );
}

export function ForgotPasswordPage() {
  const ask = useMutation({
    mutationFn: async (email: string) => {
      const { data, error } = await fetchClient.POST('/v1/auth/forgot-password', { body: { email } });
      if (error) throw error;
      return data;
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    ask.mutate(String(new FormData(e.currentTarget).get('email')));
  };
  return (
    <Card title="Forgot your password?">
      {ask.isSuccess ? (
        <Done>If that address has an account, a mail with a link to set a new password is on its way. The link works for an hour.</Done>
      ) : (
        <form onSubmit={submit} noValidate>
          <Field label="E-mail" name="email" type="email" autoComplete="username" required error={ask.error} />
          <FormError error={ask.error} fields={['email']} />
          <button type="submit" className="primary" disabled={ask.isPending}>
            Send me a link
          </button>
        </form>
      )}
      <p className="muted">
        <Link to="/login">Back to log in</Link>
      </p>
    </Card>
  );
}

export function AcceptInvitationPage() {
  const { signedIn } = useSession();
  return signedIn ? <InvitationWhileSignedIn /> : <AcceptInvitation />;
}

/** An invitation makes a new account: opened while signed in, the member signs out first and the link stays open. */
function InvitationWhileSignedIn() {
  const { me } = useTeam();
  const qc = useQueryClient();
  return (
    <Card title="Join your team">
      <p>
        You are signed in{me ? ` as ${me.email}` : ''}. This invitation creates a new account: log out, and this page asks for the new account's name and password.
      </p>
      <div className="buttons">
        <button type="button" className="primary" onClick={() => void logout(qc)}>
          Log out and accept
        </button>
        <Link to="/inbox/mine">Back to the inbox</Link>
      </div>
    </Card>
  );
}

function AcceptInvitation() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const token = params.get('token');
  const accept = useMutation({
    mutationFn: async (body: { name: string; password: string }) => {
      const { data, error } = await fetchClient.POST('/v1/auth/accept-invitation', { body: { token: token ?? '', ...body } });
      if (error) throw error;
      return data;
    },
    // Logged in: the inbox (this page is routed for members signed in too, see InvitationWhileSignedIn).
    onSuccess: (tokens) => {
      session.start(tokens);
      void navigate('/inbox/mine', { replace: true });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    accept.mutate({ name: String(form.get('name')), password: String(form.get('password')) });
  };
  return (
    <Card title="Join your team">
      {!token ? (
        <NoToken />
      ) : (
        <form onSubmit={submit} noValidate>
          <p>You are invited to a team. Tell us your name and choose a password to create your account.</p>
          <Field label="Your name" name="name" autoComplete="name" required maxLength={200} error={accept.error} />
          <Field label="Password" name="password" type="password" autoComplete="new-password" required hint="10 to 128 characters." error={accept.error} />
          <FormError error={accept.error ? linkError(accept.error) : undefined} fields={['name', 'password']} />
          <button type="submit" className="primary" disabled={accept.isPending}>
            Join the team
          </button>
        </form>
      )}
    </Card>
  );
}
