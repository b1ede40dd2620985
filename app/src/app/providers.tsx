import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { type ReactNode, useEffect, useState } from 'react';
import { isProblem } from '../lib/api.ts';
import { LiveContext, useSession } from '../lib/hooks.ts';
import { LiveConnection } from '../lib/socket.ts';

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // The socket keeps the cache current; a refetch on focus would only repeat what it said.
      refetchOnWindowFocus: false,
      staleTime: 30_000,
      retry: (count, error) => !isProblem(error) && count < 2,
    },
    mutations: { retry: false },
  },
});

export function Providers({ children }: { children: ReactNode }) {
  return <QueryClientProvider client={queryClient}>{children}</QueryClientProvider>;
}

/** The socket, open while the member is logged in (an open app makes them available). */
export function LiveProvider({ children }: { children: ReactNode }) {
  const { signedIn } = useSession();
  const [live, setLive] = useState<LiveConnection>();
  useEffect(() => {
    if (!signedIn) return;
    const connection = new LiveConnection(queryClient);
    connection.start();
    setLive(connection);
    return () => {
      connection.stop();
      setLive(undefined);
    };
  }, [signedIn]);
  if (!live) return null;
  return <LiveContext.Provider value={live}>{children}</LiveContext.Provider>;
}
