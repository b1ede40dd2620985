// What every settings screen does: call an operation, and on success refresh the lists it changed.
import { type QueryKey, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';

/** A mutation over one fetchClient call; `refresh` names the GET paths whose cached answers it changed. */
export function useAction<A, T>(call: (args: A) => Promise<{ data?: T; error?: unknown }>, refresh: string[], onDone?: (data: T, args: A) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (args: A) => {
      const { data, error } = await call(args);
      if (error !== undefined) throw error;
      return data as T;
    },
    onSuccess: async (data, args) => {
      await Promise.all(refresh.map((path) => qc.invalidateQueries({ queryKey: ['get', path] as QueryKey })));
      onDone?.(data, args);
    },
  });
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : 'never');

/**
 * Choices a box or a list shows at once, while the request that stores them runs: a controlled checkbox
 * would otherwise show the old state until the list it changed is fetched again. `settle` hands the key
 * back to what the service answered (call it once the request has settled and the list is fresh).
 */
export function useChosen<V>() {
  const [chosen, setChosen] = useState<Record<string, V>>({});
  return {
    shown: (key: string, stored: V): V => (key in chosen ? (chosen[key] as V) : stored),
    choose: (key: string, value: V) => setChosen((c) => ({ ...c, [key]: value })),
    settle: (key: string) =>
      setChosen((c) => {
        const next = { ...c };
        delete next[key];
        return next;
      }),
  };
}
