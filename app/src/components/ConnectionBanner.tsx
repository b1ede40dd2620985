import { useLive } from '../lib/hooks.ts';

const WORDS = {
  offline: 'You are offline. New messages will show once you are back.',
  reconnecting: 'Reconnecting… Nothing is lost: what happened meanwhile follows.',
  connecting: 'Connecting…',
  live: '',
  off: 'Live updates are off (the mock has no socket).',
};

/** Says when the inbox is not live; silent while it is. */
export function ConnectionBanner() {
  const live = useLive();
  const text = WORDS[live.state];
  return (
    <div className="connection" role="status" data-state={live.state} hidden={!text}>
      {text}
    </div>
  );
}
