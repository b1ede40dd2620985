// The app's one WebSocket: a ticket from POST /v1/ws/tickets (browsers cannot set headers on an
// upgrade), resumed after a drop with `last_event_id` so nothing is missed, and each stored event applied
// to the query cache once (by its id: a resumed stream may repeat what a request already showed). Live
// signals (typing, presence) go to whoever listens. An open socket is what makes the member available.
import type { QueryClient } from '@tanstack/react-query';
import { fetchClient, refreshSession, type Schemas, session } from './api.ts';
import { addMessage, patchConversation, upsertConversation } from './cache.ts';

export type SocketEvent = Schemas['SocketEvent'];
export type ConnectionState = 'connecting' | 'live' | 'reconnecting' | 'offline' | 'off';
export type OwnPresence = 'online' | 'away';

interface Control {
  type: 'welcome' | 'resync_required' | 'pong' | 'error';
}

export interface Typing {
  conversationId: string;
  /** When the signal stops counting (no "stopped" signal may ever come). */
  until: number;
}

const PING_EVERY_MS = 25_000;
const SILENT_LIMIT_MS = 60_000;
const SEEN_KEPT = 2_000;
const TYPING_SHOWN_MS = 6_000;

export class LiveConnection {
  state: ConnectionState = 'connecting';
  presence: OwnPresence = 'online';
  /** Who the team is (online, away, offline) as the socket last said, by user id. */
  readonly teamPresence = new Map<string, Schemas['Presence']>();
  /** Conversations whose visitor is typing. */
  readonly typing = new Map<string, Typing>();
  /** The conversation on screen: its visitor messages are read as they come. */
  reading: string | undefined;

  #ws: WebSocket | undefined;
  #lastEventId: string | undefined;
  #seen = new Set<string>();
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pinger: ReturnType<typeof setInterval> | undefined;
  #lastFrameAt = 0;
  #stopped = false;
  /** A connection was welcomed before: the next welcome is a reconnection. */
  #welcomed = false;
  #listeners = new Set<() => void>();
  #eventListeners = new Set<(event: SocketEvent) => void>();
  readonly #qc: QueryClient;

  constructor(qc: QueryClient) {
    this.#qc = qc;
  }

  subscribe = (listener: () => void) => {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  };

  onEvent(listener: (event: SocketEvent) => void) {
    this.#eventListeners.add(listener);
    return () => void this.#eventListeners.delete(listener);
  }

  #changed() {
    for (const listener of this.#listeners) listener();
  }

  #setState(state: ConnectionState) {
    if (this.state === state) return;
    this.state = state;
    this.#changed();
  }

  start() {
    if (import.meta.env.VITE_LIVE === 'off') return this.#setState('off');
    this.#stopped = false;
    addEventListener('online', this.#online);
    addEventListener('offline', this.#offline);
    this.#pinger = setInterval(() => this.#heartbeat(), PING_EVERY_MS);
    void this.#connect();
  }

  stop() {
    this.#stopped = true;
    removeEventListener('online', this.#online);
    removeEventListener('offline', this.#offline);
    clearInterval(this.#pinger);
    clearTimeout(this.#timer);
    this.#ws?.close(1000);
    this.#ws = undefined;
  }

  setPresence(presence: OwnPresence) {
    this.presence = presence;
    this.#send({ type: 'presence', status: presence });
    this.#changed();
  }

  sendTyping(conversationId: string, isTyping: boolean) {
    this.#send({ type: 'typing', conversation_id: conversationId, is_typing: isTyping });
  }

  #send(frame: object) {
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify(frame));
  }

  #online = () => {
    clearTimeout(this.#timer);
    this.#attempt = 0;
    if (!this.#ws) void this.#connect();
  };

  #offline = () => {
    this.#setState('offline');
    // The browser may keep a dead socket open a long time: drop it, and resume once back online.
    this.#ws?.close();
  };

  #heartbeat() {
    if (this.#ws?.readyState !== WebSocket.OPEN) return;
    if (Date.now() - this.#lastFrameAt > SILENT_LIMIT_MS) return void this.#ws.close();
    this.#send({ type: 'ping' });
  }

  async #connect() {
    if (this.#stopped) return;
    if (!navigator.onLine) return this.#setState('offline');
    this.#setState(this.#attempt === 0 && !this.#lastEventId ? 'connecting' : 'reconnecting');
    const { data } = await fetchClient.POST('/v1/ws/tickets').catch(() => ({ data: undefined }));
    if (this.#stopped) return;
    if (!data) return this.#retry();
    const url = new URL(`${location.origin.replace(/^http/, 'ws')}/api/v1/ws`);
    url.searchParams.set('ticket', data.ticket);
    if (this.#lastEventId) url.searchParams.set('last_event_id', this.#lastEventId);
    const ws = new WebSocket(url);
    this.#ws = ws;
    this.#lastFrameAt = Date.now();
    ws.addEventListener('message', (message) => {
      this.#lastFrameAt = Date.now();
      this.#frame(JSON.parse(String(message.data)) as SocketEvent | Control);
    });
    ws.addEventListener('close', (close) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      if (this.#stopped) return;
      // 4001: the credential was revoked or expired. A refresh says which: refused, the login is over.
      if (close.code === 4001) {
        void refreshSession().then((ok) => (ok ? this.#retry() : this.stop()));
        return;
      }
      this.#retry();
    });
  }

  #retry() {
    if (this.#stopped) return;
    this.#setState(navigator.onLine ? 'reconnecting' : 'offline');
    const delay = Math.min(10_000, 500 * 2 ** this.#attempt) * (0.75 + Math.random() / 2);
    this.#attempt++;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#connect(), delay);
  }

  #frame(frame: SocketEvent | Control) {
    switch (frame.type) {
      case 'welcome':
        this.#attempt = 0;
        // Back without a position to resume from (no stored event had come yet): what happened
        // meanwhile is read again over REST instead.
        if (this.#welcomed && !this.#lastEventId) void this.#qc.invalidateQueries();
        this.#welcomed = true;
        this.#setState('live');
        // A new connection starts online: an agent who chose away stays away.
        if (this.presence === 'away') this.#send({ type: 'presence', status: 'away' });
        return;
      case 'resync_required':
        // Past what the server keeps: start again from what REST says now.
        this.#lastEventId = undefined;
        this.#seen.clear();
        void this.#qc.invalidateQueries();
        return;
      case 'pong':
      case 'error':
        return;
    }
    const event = frame as SocketEvent;
    if ('id' in event) {
      if (this.#seen.has(event.id)) return;
      this.#seen.add(event.id);
      if (this.#seen.size > SEEN_KEPT) this.#seen.delete(this.#seen.values().next().value!);
      this.#lastEventId = event.id;
    }
    this.#apply(event);
    for (const listener of this.#eventListeners) listener(event);
  }

  #apply(event: SocketEvent) {
    const qc = this.#qc;
    switch (event.type) {
      case 'conversation.created':
      case 'conversation.updated':
        return upsertConversation(qc, event.data.conversation);
      case 'conversation.assigned':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          assigned_user_id: event.data.assigned_user_id,
          assigned_to: event.data.assigned_user_id,
          status: c.status === 'closed' ? c.status : event.data.assigned_user_id ? 'assigned' : 'open',
          updated_at: event.created_at,
        }));
      case 'conversation.transferred':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          assigned_user_id: event.data.assigned_user_id,
          assigned_to: event.data.assigned_user_id,
          department_id: event.data.department_id,
          status: event.data.assigned_user_id ? 'assigned' : 'open',
          updated_at: event.created_at,
        }));
      case 'conversation.closed':
        return patchConversation(qc, event.data.conversation_id, (c) => ({ ...c, status: 'closed', closed_at: event.data.closed_at, updated_at: event.created_at }));
      case 'conversation.reopened':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          status: 'open',
          assigned_user_id: null,
          assigned_to: null,
          closed_at: null,
          updated_at: event.created_at,
        }));
      case 'csat.submitted':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          satisfaction: { rating: event.data.rating, comment: event.data.comment, answered_at: event.created_at },
        }));
      case 'conversation.snoozed':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          snoozed_until: event.data.snoozed_until,
          snooze_until_reply: event.data.snooze_until_reply,
        }));
      case 'conversation.unsnoozed':
        return patchConversation(qc, event.data.conversation_id, (c) => ({ ...c, snoozed_until: null, snooze_until_reply: false }));
      case 'conversation.label_added':
        return patchConversation(qc, event.data.conversation_id, (c) => ({
          ...c,
          labels: [...(c.labels ?? []).filter((l) => l.id !== event.data.label.id), event.data.label].sort((a, b) => a.name.localeCompare(b.name)),
        }));
      case 'conversation.label_removed':
        return patchConversation(qc, event.data.conversation_id, (c) => ({ ...c, labels: (c.labels ?? []).filter((l) => l.id !== event.data.label.id) }));
      case 'message.created':
        if (event.data.message.sender_type === 'visitor' && this.typing.delete(event.data.conversation_id)) this.#changed();
        return addMessage(qc, event.data.message, { reading: this.reading === event.data.conversation_id && document.visibilityState === 'visible' });
      case 'presence.updated':
        this.teamPresence.set(event.data.user_id, event.data.presence);
        if (event.data.user_id === session.userId && event.data.presence !== 'offline') this.presence = event.data.presence;
        return this.#changed();
      case 'typing':
        if (event.data.sender_type !== 'visitor') return;
        if (event.data.is_typing) {
          const conversationId = event.data.conversation_id;
          const typing = { conversationId, until: Date.now() + TYPING_SHOWN_MS };
          this.typing.set(conversationId, typing);
          // No "stopped" may ever come (the visitor left): the signal fades by itself.
          setTimeout(() => {
            if (this.typing.get(conversationId) !== typing) return;
            this.typing.delete(conversationId);
            this.#changed();
          }, TYPING_SHOWN_MS);
        } else this.typing.delete(event.data.conversation_id);
        return this.#changed();
      default:
        return;
    }
  }
}
