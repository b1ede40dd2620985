import { useLive } from '../lib/hooks.ts';
import type { OwnPresence } from '../lib/socket.ts';

/** The member's own availability: online (conversations may be routed to them) or away. */
export function PresenceSwitch() {
  const live = useLive();
  return (
    <label className="presence">
      <span className={`dot ${live.presence}`} aria-hidden="true" />
      <span className="visually-hidden">Your availability</span>
      <select value={live.presence} onChange={(e) => live.setPresence(e.target.value as OwnPresence)}>
        <option value="online">Online</option>
        <option value="away">Away</option>
      </select>
    </label>
  );
}
