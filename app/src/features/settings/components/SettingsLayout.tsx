// The settings: a screen per area, each over the API's own operations. Owners and admins see every
// area; agents only those they may change (their canned responses), and are sent away from the rest.
import { lazy, Suspense, useEffect, useRef } from 'react';
import { Link, Navigate, NavLink, useParams } from 'react-router';
import { useTeam } from '../../../lib/hooks.ts';

const TeamSettings = lazy(() => import('./TeamSettings.tsx'));
const WidgetsSettings = lazy(() => import('./WidgetsSettings.tsx'));
const CannedSettings = lazy(() => import('./CannedSettings.tsx'));
const LabelsSettings = lazy(() => import('./LabelsSettings.tsx'));
const ApiKeysSettings = lazy(() => import('./ApiKeysSettings.tsx'));
const WebhooksSettings = lazy(() => import('./WebhooksSettings.tsx'));
const WorkflowsSettings = lazy(() => import('./WorkflowsSettings.tsx'));
const BotsSettings = lazy(() => import('./BotsSettings.tsx'));
const BillingSettings = lazy(() => import('./BillingSettings.tsx'));

const SECTIONS = [
  { id: 'team', label: 'Team', admin: true, Screen: TeamSettings },
  { id: 'widgets', label: 'Widgets', admin: true, Screen: WidgetsSettings },
  { id: 'canned-responses', label: 'Canned responses', admin: false, Screen: CannedSettings },
  { id: 'labels', label: 'Labels', admin: true, Screen: LabelsSettings },
  { id: 'api-keys', label: 'API keys', admin: true, Screen: ApiKeysSettings },
  { id: 'webhooks', label: 'Webhooks', admin: true, Screen: WebhooksSettings },
  { id: 'workflows', label: 'Workflows', admin: true, Screen: WorkflowsSettings },
  { id: 'bots', label: 'Bots', admin: true, Screen: BotsSettings },
  { id: 'billing', label: 'Billing', admin: true, Screen: BillingSettings },
] as const;

export default function SettingsLayout() {
  const { section } = useParams();
  const { team, me } = useTeam();
  const admin = me?.role === 'owner' || me?.role === 'admin';
  const visible = SECTIONS.filter((s) => admin || !s.admin);
  const current = SECTIONS.find((s) => s.id === section);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (current) document.title = `${current.label} · Settings · Customer Chat`;
    heading.current?.focus();
  }, [current]);
  if (team.isPending) return <p role="status">Loading…</p>;
  if (!current || (current.admin && !admin)) {
    return <Navigate to={`/settings/${admin ? 'team' : 'canned-responses'}`} replace state={current ? { refused: current.label } : undefined} />;
  }
  const { Screen } = current;
  return (
    <div className="settings">
      <header className="top">
        <span className="brand">Settings</span>
        <Link to="/inbox/mine">Back to the inbox</Link>
        {admin && <Link to="/reports">Reports</Link>}
        {admin && <Link to="/setup/workspace">Setup guide</Link>}
      </header>
      <nav aria-label="Settings" className="settings-nav">
        <ul>
          {visible.map((s) => (
            <li key={s.id}>
              <NavLink to={`/settings/${s.id}`}>{s.label}</NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <main className="settings-main" aria-labelledby="settings-heading">
        <h1 id="settings-heading" ref={heading} tabIndex={-1}>
          {current.label}
        </h1>
        <Suspense fallback={<p role="status">Loading…</p>}>
          <Screen />
        </Suspense>
      </main>
    </div>
  );
}
