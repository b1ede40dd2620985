import type { WebSocket } from 'ws';
import type { ConnectionStatus } from './presence-tracker.ts';
import { type OutgoingFrame, writeFrame } from './wire.ts';

/** Close codes, documented in openapi/events.asyncapi.yaml. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocol: 1008,
  tooBig: 1009,
  credentials: 4001,
  tooSlow: 4008,
} as const;

export type Audience =
  | { kind: 'member'; userId: string; sessionId: string }
  /** keyHash: the SHA-256 of the key's value (never the value), to see at heartbeats that it still works. */
  | { kind: 'integration'; keyId: string; keyHash: Buffer }
  | { kind: 'visitor'; visitorId: string };

export interface Connection {
  id: string;
  ws: WebSocket;
  tenantId: string;
  audience: Audience;
  status: ConnectionStatus;
  alive: boolean;
  /** Before its welcome (and its resume), what the stream delivers waits here. */
  backlog: (string | OutgoingFrame)[] | undefined;
  expiresAt: number | undefined;
  expiryTimer: NodeJS.Timeout | undefined;
}

/** The person (member or visitor) a connection stands for in presence; integrations have none. */
export function subjectOf(conn: Connection): string | undefined {
  if (conn.audience.kind === 'member') return conn.audience.userId;
  if (conn.audience.kind === 'visitor') return conn.audience.visitorId;
  return undefined;
}

/** Sends a frame; a client that lets more than `maxBufferedBytes` queue up is let go (it resumes later). */
export function send(conn: Connection, frame: string | OutgoingFrame, maxBufferedBytes: number): void {
  if (conn.ws.readyState !== conn.ws.OPEN) return;
  // A one-off (a welcome, a pong) is framed by ws; an event's frame was framed once for all its sockets.
  if (typeof frame === 'string') conn.ws.send(frame, { binary: false });
  else writeFrame(conn.ws, frame);
  if (conn.ws.bufferedAmount > maxBufferedBytes) {
    conn.ws.close(CLOSE.tooSlow, 'too slow');
    setTimeout(() => conn.ws.terminate(), 1000).unref();
  }
}

/** An error frame (the contract's ErrorFrame): the socket stays open. */
export function sendError(conn: Connection, code: 'ERR_NOT_FOUND' | 'ERR_VALIDATION' | 'ERR_UNAVAILABLE', detail: string, maxBufferedBytes: number): void {
  send(conn, JSON.stringify({ type: 'error', code, detail }), maxBufferedBytes);
}

export function deliverOrBuffer(conn: Connection, frame: string | OutgoingFrame, maxBufferedBytes: number): void {
  if (conn.backlog) conn.backlog.push(frame);
  else send(conn, frame, maxBufferedBytes);
}

export function flushBacklog(conn: Connection, maxBufferedBytes: number): void {
  const waiting = conn.backlog ?? [];
  conn.backlog = undefined;
  for (const frame of waiting) send(conn, frame, maxBufferedBytes);
}
