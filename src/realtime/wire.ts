import * as wsModule from 'ws';
import type { WebSocket } from 'ws';

/**
 * A text frame for many sockets: its payload, and the whole frame as it goes on the wire (header and
 * payload in one buffer), built once. An event reaches every socket of its tenant; `ws.send` would build
 * the same header again for each, with an options object and a corked pair of writes, which was a third
 * of the per-socket cost of a fan-out. Socket.IO broadcasts the same way (socket.io-adapter's
 * `wsPreEncodedFrame`, written by engine.io through the socket's sender).
 */
export interface OutgoingFrame {
  /** The text of each frame: one, or several written together (framesTogether). */
  readonly payloads: readonly Buffer[];
  readonly wire: Buffer;
}

interface FrameOptions {
  fin: boolean;
  rsv1: boolean;
  opcode: number;
  mask: boolean;
  readOnly: boolean;
}

// ws exports its Sender (ws/wrapper.mjs) though @types/ws does not declare it.
const { Sender } = wsModule as unknown as { Sender: { frame(data: Buffer, options: FrameOptions): Buffer[] } };

/** The sender's idle state: nothing compressing or queued ahead of a new frame (ws/lib/sender.js, DEFAULT). */
const SENDER_IDLE = 0;

interface SenderInternals {
  _state?: unknown;
  /** False while a message sent in fragments is unfinished: a whole frame may not cut into it. */
  _firstFragment?: unknown;
  _queue?: unknown[];
  sendFrame?: (list: Buffer[]) => void;
}

interface SocketInternals {
  _sender?: SenderInternals;
  /** The negotiated extensions by name (ws.extensions joins them into a new string at every read). */
  _extensions?: Record<string, unknown>;
}

const TEXT = 0x1;

export function outgoingFrame(payload: Buffer): OutgoingFrame {
  // Server frames are never masked (RFC 6455, 5.1); compression is off on every socket (DESIGN section 6).
  const parts = Sender.frame(payload, { fin: true, rsv1: false, opcode: TEXT, mask: false, readOnly: false });
  return { payloads: [payload], wire: parts.length === 1 ? parts[0]! : Buffer.concat(parts) };
}

/**
 * Several frames for one socket as one write: each frame is a write, a system call, and under a stream of
 * sends to a hundred sockets those writes were a third of the service's CPU. Frames still whole, in order.
 */
export function framesTogether(frames: readonly OutgoingFrame[]): OutgoingFrame {
  return { payloads: frames.flatMap((f) => f.payloads), wire: Buffer.concat(frames.map((f) => f.wire)) };
}

/**
 * Writes the frame's bytes as they are when the socket's sender is idle and uncompressed, the only way
 * this service uses it; any other time (a ws whose internals moved, a compressing peer) through
 * `ws.send`, which frames each payload itself.
 */
export function writeFrame(ws: WebSocket, frame: OutgoingFrame): void {
  const { _sender: sender, _extensions: extensions } = ws as unknown as SocketInternals;
  if (
    sender?._state === SENDER_IDLE &&
    sender._queue?.length === 0 &&
    sender._firstFragment === true &&
    typeof sender.sendFrame === 'function' &&
    extensions !== undefined &&
    !('permessage-deflate' in extensions)
  ) {
    sender.sendFrame([frame.wire]);
  } else {
    for (const payload of frame.payloads) ws.send(payload, { binary: false });
  }
}
