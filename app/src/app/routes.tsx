// The screens, composed here so that features never import each other.
import { useQueryClient } from '@tanstack/react-query';
import type { Schemas } from '../lib/api.ts';
import { useEffect } from 'react';
import { Navigate, Route, Routes, useParams } from 'react-router';
import { ConnectionBanner } from '../components/ConnectionBanner.tsx';
import { PresenceSwitch } from '../components/PresenceSwitch.tsx';
import { logout } from '../features/auth/api.ts';
import { LoginPage } from '../features/auth/components/LoginPage.tsx';
import { ConversationPane } from '../features/conversation/components/ConversationPane.tsx';
import { listOptions } from '../features/inbox/api/queries.ts';
import { viewOf } from '../features/inbox/api/views.ts';
import { ConversationList } from '../features/inbox/components/ConversationList.tsx';
import { ViewNav } from '../features/inbox/components/ViewNav.tsx';
import { useSession, useTeam } from '../lib/hooks.ts';
import { LiveProvider } from './providers.tsx';

export function AppRoutes() {
  const { signedIn } = useSession();
  if (!signedIn) {
    return (
      <Routes>
        <Route path="/login" element={<LoginPage />} />
        <Route path="*" element={<Navigate to="/login" replace />} />
      </Routes>
    );
  }
  return (
    <LiveProvider>
      <Routes>
        <Route path="/inbox/:view/:conversationId?" element={<Inbox />} />
        <Route path="*" element={<Navigate to="/inbox/mine" replace />} />
      </Routes>
    </LiveProvider>
  );
}

function Inbox() {
  const { view: viewId, conversationId } = useParams();
  const view = viewOf(viewId);
  const qc = useQueryClient();
  const { me } = useTeam();
  useUnreadTitle();
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
        <PresenceSwitch />
        <button type="button" onClick={() => void logout(qc)}>
          Log out
        </button>
      </header>
      <ViewNav />
      <ConversationList view={view} selected={conversationId} />
      <main id="main-pane" className="pane">
        {conversationId ? <ConversationPane id={conversationId} key={conversationId} /> : <p className="muted empty">Choose a conversation.</p>}
      </main>
    </div>
  );
}

/** The tab's title counts unread conversations, so a background tab shows that something came in. */
function useUnreadTitle() {
  const qc = useQueryClient();
  useEffect(() => {
    const update = () => {
      const ids = new Set<string>();
      for (const v of ['mine', 'unassigned']) {
        for (const c of qc.getQueryData<Schemas['ConversationList']>(listOptions(viewOf(v)).queryKey)?.data ?? []) if (c.unread_count > 0) ids.add(c.id);
      }
      document.title = ids.size ? `(${ids.size}) Inbox · Customer Chat` : 'Inbox · Customer Chat';
    };
    update();
    return qc.getQueryCache().subscribe(update);
  }, [qc]);
}
