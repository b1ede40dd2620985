// The one way a test waits for something to happen: it names what it waits for (a row, a frame, a mail, a
// count), looks again until it is there, and fails naming it when it does not come. Never a sleep.

export interface EventuallyOptions {
  /** How long before giving up (default 10 s): a bound for a broken run, not a time anything should take. */
  timeoutMs?: number;
  /** How often to look again when nothing wakes the wait (default 25 ms; 100 with `wake`). */
  everyMs?: number;
  /** Registers a callback to call when what is awaited may have come (a frame, a request): looked at at once. */
  wake?: (wakeUp: () => void) => void;
}

type Falsy = undefined | null | false;

/**
 * Calls `check` until it answers something other than undefined, null or false, and resolves to that
 * answer. Rejects after the timeout with "timed out after N ms waiting for <what>"; `what` may be a
 * function, to say what was there instead at that moment. A check that throws rejects at once.
 */
export async function eventually<T>(check: () => T | Falsy | Promise<T | Falsy>, what: string | (() => string), options: EventuallyOptions | number = {}): Promise<T> {
  const { timeoutMs = 10_000, wake, everyMs = wake ? 100 : 25 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, everyMs);
      wake?.(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
