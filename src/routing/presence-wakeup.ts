import type { ConnectionStatus, PresenceTracker } from '../realtime/presence-tracker.ts';

/**
 * The presence tracker, telling routing when a member becomes online (logs in, comes back from away):
 * their tenant's queue may have someone to give conversations to now. Visitors' presence is not routing's.
 */
export class RoutingPresence implements PresenceTracker {
  readonly #inner: PresenceTracker;
  #listener: ((tenantId: string) => void) | undefined;

  constructor(inner: PresenceTracker) {
    this.#inner = inner;
  }

  onMemberOnline(listener: (tenantId: string) => void): void {
    this.#listener = listener;
  }

  presenceOf(...args: Parameters<PresenceTracker['presenceOf']>) {
    return this.#inner.presenceOf(...args);
  }

  async set(tenantId: string, subject: string, connectionId: string, status: ConnectionStatus) {
    const change = await this.#inner.set(tenantId, subject, connectionId, status);
    if (change.after === 'online' && change.before !== 'online' && subject.startsWith('usr_')) this.#listener?.(tenantId);
    return change;
  }

  remove(...args: Parameters<PresenceTracker['remove']>) {
    return this.#inner.remove(...args);
  }

  refresh(...args: Parameters<PresenceTracker['refresh']>) {
    return this.#inner.refresh(...args);
  }
}
