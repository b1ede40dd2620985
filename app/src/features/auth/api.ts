import type { QueryClient } from '@tanstack/react-query';
import { fetchClient, session } from '../../lib/api.ts';

/** Ends the login on the server (every token of it stops working) and forgets everything cached. */
export async function logout(qc: QueryClient): Promise<void> {
  const refresh_token = sessionStorage.getItem('chat-app:refresh-token');
  if (refresh_token) await fetchClient.POST('/v1/auth/logout', { body: { refresh_token } }).catch(() => undefined);
  session.end();
  qc.clear();
}
