import type { QueryClient } from '@tanstack/react-query';
import { fetchClient, session } from '../../lib/api.ts';

/**
 * Forgets the login here first (no request, refetch or socket goes out with it any more; those in flight
 * are cancelled), then ends it on the server, where every token of it stops working: nothing the app sends
 * meets the revoked token and fails with a 401.
 */
export async function logout(qc: QueryClient): Promise<void> {
  const refresh_token = sessionStorage.getItem('chat-app:refresh-token');
  await qc.cancelQueries();
  session.end();
  qc.clear();
  if (refresh_token) await fetchClient.POST('/v1/auth/logout', { body: { refresh_token } }).catch(() => undefined);
}
