// Hooks every feature uses: the login, the live connection, who "me" is, and a clock for waiting times.
import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useState, useSyncExternalStore } from 'react';
import { $api, type Schemas, session } from './api.ts';
import type { LiveConnection } from './socket.ts';

export function useSession() {
  return useSyncExternalStore(session.subscribe, session.get);
}

export const LiveContext = createContext<LiveConnection | undefined>(undefined);

/** The live connection, re-rendering the caller whenever its state, presence or typing changes. */
export function useLive(): LiveConnection {
  const live = useContext(LiveContext);
  if (!live) throw new Error('useLive outside the LiveContext');
  const [, setVersion] = useState(0);
  useEffect(() => live.subscribe(() => setVersion((v) => v + 1)), [live]);
  return live;
}

export type TeamMember = Schemas['TeamMember'];

/** The team with presence, and the logged-in member among them (their role and seat decide what they see). */
export function useTeam() {
  const team = useQuery($api.queryOptions('get', '/v1/team/members', { params: { query: { include: 'presence' } } }, { staleTime: 60_000 }));
  const me = team.data?.data.find((m) => m.user_id === session.userId);
  return { team, me, readOnly: me?.seat === 'lite' };
}

/** The tenant's labels, by name (at most 50 a tenant): the inbox filter, a conversation's chips, reports. */
export function useLabels() {
  return useQuery($api.queryOptions('get', '/v1/labels', { params: { query: { limit: 100 } } }, { staleTime: 300_000 }));
}

/** The current time, moving every 30 seconds (waiting times). */
export function useNow(everyMs = 30_000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

export function since(iso: string | null | undefined, now: number): string {
  if (!iso) return '';
  const minutes = Math.max(0, Math.floor((now - Date.parse(iso)) / 60_000));
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}
