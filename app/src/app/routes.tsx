// The screens, composed here so that features never import each other.
import { useQueryClient } from '@tanstack/react-query';
import { lazy, type ReactNode, Suspense, useEffect, useState } from 'react';
import { Link, Navigate, Route, Routes, useLocation, useParams } from 'react-router';
import { ConnectionBanner } from '../components/ConnectionBanner.tsx';
import { PresenceSwitch } from '../components/PresenceSwitch.tsx';
import { logout } from '../features/auth/api.ts';
import { LoginPage } from '../features/auth/components/LoginPage.tsx';
import { ConversationPane } from '../features/conversation/components/ConversationPane.tsx';
import { listOptions } from '../features/inbox/api/queries.ts';
import { useDepartmentViews, viewOf } from '../features/inbox/api/views.ts';
import { ConversationList } from '../features/inbox/components/ConversationList.tsx';
import { ViewNav } from '../features/inbox/components/ViewNav.tsx';
import { useLive, useSession, useTeam } from '../lib/hooks.ts';
import { LiveProvider } from './providers.tsx';

// Loaded when first opened: the inbox's first load stays small (npm run app:check).
const SignUpPage = lazy(() => import('../features/auth/components/SignUpPage.tsx').then((m) => ({ default: m.SignUpPage })));
const mailPages = () => import('../features/auth/components/MailLinkPages.tsx');
const VerifyEmailPage = lazy(() => mailPages().then((m) => ({ default: m.VerifyEmailPage })));
const ResetPasswordPage = lazy(() => mailPages().then((m) => ({ default: m.ResetPasswordPage })));
const ForgotPasswordPage = lazy(() => mailPages().then((m) => ({ default: m.ForgotPasswordPage })));
const AcceptInvitationPage = lazy(() => mailPages().then((m) => ({ default: m.AcceptInvitationPage })));
const SetupGuide = lazy(() => import('../features/setup/components/SetupGuide.tsx').then((m) => ({ default: m.SetupGuide })));
const SettingsLayout = lazy(() => import('../features/settings/components/SettingsLayout.tsx'));
const ReportsPage = lazy(() => import('../features/reports/components/ReportsPage.tsx'));

const later = (element: ReactNode) => (
  <Suspense
    fallback={
      <p className="muted loading" role="status">
        Loading…
      </p>
    }
  >
    {element}
  </Suspense>
);

export function AppRoutes() {
  const { signedIn } = useSession();
  if (!signedIn) {
    return (
      <Routes>
        <Route path="/login" element={<LoginPage />} />
        <Route path="/signup" element={later(<SignUpPage />)} />
        <Route path="/forgot-password" element={later(<ForgotPasswordPage />)} />
        <Route path="/verify-email" element={later(<VerifyEmailPage />)} />
        <Route path="/reset-password" element={later(<ResetPasswordPage />)} />
        <Route path="/accept-invitation" element={later(<AcceptInvitationPage />)} />
        <Route path="*" element={<Navigate to="/login" replace />} />
      </Routes>
    );
  }
  return (
    <LiveProvider>
      <Routes>
        <Route path="/inbox/:view/:conversationId?" element={<Inbox />} />
        <Route path="/setup/:step?" element={later(<SetupGuide />)} />
        {/* Just signed up: the guide comes next. */}
        <Route path="/signup" element={<Navigate to="/setup/workspace" replace />} />
        <Route path="/settings/:section?" element={later(<SettingsLayout />)} />
        <Route path="/reports" element={later(<ReportsPage />)} />
        <Route path="/verify-email" element={later(<VerifyEmailPage />)} />
        <Route path="/reset-password" element={later(<ResetPasswordPage />)} />
        <Route path="/accept-invitation" element={later(<AcceptInvitationPage />)} />
        <Route path="*" element={<Navigate to="/inbox/mine" replace />} />
      </Routes>
    </LiveProvider>
  );
}

function Inbox() {
  const { view: viewId, conversationId } = useParams();
  const view = viewOf(viewId, useDepartmentViews());
  const qc = useQueryClient();
  const { me } = useTeam();
  const { search } = useLocation();
  useUnreadTitle();
  useNewConversationNotices();
  return (
    <div className="shell" data-conversation-open={conversationId ? 'true' : 'false'}>
      <header className="top">
        <a className="skip" href="#main-pane">
          Skip to the conversation
        </a>
        <span className="brand">Inbox</span>
        <ConnectionBanner />
        <span className="me">{me?.name}</span>
        {me?.seat === 'lite' && <span className="seat">Read-only seat</span>}
        <NotificationSwitch />
        <PresenceSwitch />
        {(me?.role === 'owner' || me?.role === 'admin') && <Link to="/reports">Reports</Link>}
        <Link to="/settings">Settings</Link>
        <button type="button" onClick={() => void logout(qc)}>
          Log out
        </button>
      </header>
      <ViewNav />
      <ConversationList view={view} selected={conversationId} />
      <main id="main-pane" className="pane">
        {conversationId && (
          <Link className="back" to={{ pathname: `/inbox/${view.id}`, search }}>
            ← {view.label}
          </Link>
        )}
        {conversationId ? <ConversationPane id={conversationId} key={conversationId} /> : <p className="muted empty">Choose a conversation.</p>}
      </main>
    </div>
  );
}

/** A new conversation while the tab is in the background: the browser's notification, when allowed. */
function useNewConversationNotices() {
  const live = useLive();
  useEffect(
    () =>
      live.onEvent((event) => {
        if (event.type !== 'conversation.created' || document.visibilityState === 'visible') return;
        if (!('Notification' in window) || Notification.permission !== 'granted') return;
        new Notification('New conversation', { body: event.data.conversation.last_message ?? 'A visitor started a conversation.', tag: event.data.conversation.id });
      }),
    [live],
  );
}

function NotificationSwitch() {
  const [permission, setPermission] = useState(() => ('Notification' in window ? Notification.permission : 'denied'));
  if (permission !== 'default') return null;
  return (
    <button type="button" onClick={() => void Notification.requestPermission().then(setPermission)}>
      Notify me
    </button>
  );
}

/** The tab's title counts unread conversations, so a background tab shows that something came in. */
function useUnreadTitle() {
  const qc = useQueryClient();
  useEffect(() => {
    // The cache tells of every fetch, observer and state change of every query: the count is taken again
    // only when one of the two lists' data is another object, and a page read as the member scrolls adds
    // only its own conversations to it (any other change counts all again). Counting thousands of loaded
    // conversations at each of those events was most of the JavaScript memory the tab allocated.
    const listsNow = () => ['mine', 'unassigned'].map((v) => qc.getQueryData(listOptions(viewOf(v)).queryKey));
    let counted: ReturnType<typeof listsNow> = [];
    let ids = new Set<string>();
    const update = () => {
      const lists = listsNow();
      if (lists.every((data, i) => data === counted[i])) return;
      const pagesBefore = counted.map((data) => data?.pages ?? []);
      const appended = lists.every((data, i) => {
        const now = data?.pages ?? [];
        const before = pagesBefore[i] ?? [];
        return now.length >= before.length && before.every((page, j) => page === now[j]);
      });
      if (!appended) ids = new Set();
      for (const [i, list] of lists.entries()) {
        for (const page of (list?.pages ?? []).slice(appended ? (pagesBefore[i]?.length ?? 0) : 0)) for (const c of page.data) if (c.unread_count > 0) ids.add(c.id);
      }
      counted = lists;
      document.title = ids.size ? `(${ids.size}) Inbox · Customer Chat` : 'Inbox · Customer Chat';
    };
    update();
    return qc.getQueryCache().subscribe(update);
  }, [qc]);
}
