import { describeError } from '../lib/api.ts';

/** An error said in words, announced to screen readers as it appears. */
export function ErrorText({ error, id }: { error: unknown; id?: string }) {
  if (!error) return null;
  return (
    <p className="error" role="alert" id={id}>
      {typeof error === 'string' ? error : describeError(error)}
    </p>
  );
}
