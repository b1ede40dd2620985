// What every settings screen does: call an operation, and on success refresh the lists it changed.
import { type QueryKey, useMutation, useQueryClient } from '@tanstack/react-query';

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
