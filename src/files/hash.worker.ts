// Runs in a worker thread (src/files/offthread-hash.ts): SHA-256 of uploads, off the event loop. Each
// upload is a session; its bytes arrive in order, as transferred buffers, each acknowledged once hashed.
import { createHash, type Hash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

export type HashRequest =
  | { type: 'data'; id: number; bytes: ArrayBuffer; length: number }
  | { type: 'end'; id: number; bytes: ArrayBuffer; length: number }
  | { type: 'abort'; id: number };

/** An ack hands the batch's buffer back, for the session's next batch. */
export type HashReply = { type: 'ack'; id: number; bytes: ArrayBuffer } | { type: 'digest'; id: number; digest: Uint8Array };

const sessions = new Map<number, Hash>();
const port = parentPort!;

port.on('message', (message: HashRequest) => {
  if (message.type === 'abort') {
    sessions.delete(message.id);
    return;
  }
  let hash = sessions.get(message.id);
  if (!hash) {
    hash = createHash('sha256');
    sessions.set(message.id, hash);
  }
  hash.update(new Uint8Array(message.bytes, 0, message.length));
  if (message.type === 'data') {
    port.postMessage({ type: 'ack', id: message.id, bytes: message.bytes } satisfies HashReply, [message.bytes]);
    return;
  }
  sessions.delete(message.id);
  const digest = hash.digest();
  port.postMessage({ type: 'digest', id: message.id, digest } satisfies HashReply, [digest.buffer as ArrayBuffer]);
});
