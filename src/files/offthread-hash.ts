import { Worker } from 'node:worker_threads';
import type { HashReply, HashRequest } from './hash.worker.ts';

// SHA-256 of uploads on a worker thread. Hashing is most of an upload's CPU on the event loop (profiled
// under npm run bench:files), and the digest is needed only once the file
// has ended: so the bytes are copied into batches handed to one worker, while the event loop goes on
// parsing and writing. A session waits (the upload's stream with it) while two or more of its batches are
// still being hashed, so a slow worker slows uploads instead of piling their bytes up in memory. The worker
// hands each batch's buffer back with its ack: with chunks no larger than a batch (HTTP's are 64 KiB at
// most), a session fills the same three buffers over and over.

/** Bytes per batch sent to the worker: 50 uploads at once hold 3 batches each (chunks up to a batch). */
export const HASH_BATCH_BYTES = 64 * 1024;
const MAX_BATCHES_IN_FLIGHT = 2;

interface Session {
  inFlight: number;
  /** Batch buffers back from the worker, to be filled again. */
  free: ArrayBuffer[];
  /** Called when a batch is acknowledged: the session may go on. */
  resume: (() => void) | undefined;
  finish: { resolve(digest: Buffer): void; reject(err: Error): void } | undefined;
  fail(err: Error): void;
}

class HashThread {
  readonly #worker: Worker;
  readonly #sessions = new Map<number, Session>();
  #nextId = 1;
  #broken: Error | undefined;
  onExit: (() => void) | undefined;

  constructor() {
    // No --import of the app's preloads (telemetry): the worker runs this one file.
    this.#worker = new Worker(new URL('./hash.worker.ts', import.meta.url), { execArgv: [] });
    // An idle worker does not keep the process alive.
    this.#worker.unref();
    this.#worker.on('message', (reply: HashReply) => this.#receive(reply));
    const broken = (err: Error) => {
      this.#broken ??= err;
      for (const session of this.#sessions.values()) session.fail(err);
      this.#sessions.clear();
      this.onExit?.();
    };
    this.#worker.on('error', broken);
    this.#worker.on('exit', (code) => broken(new Error(`The hashing thread stopped (exit code ${code})`)));
  }

  get broken(): boolean {
    return this.#broken !== undefined;
  }

  get sessions(): number {
    return this.#sessions.size;
  }

  open(session: Session): number {
    if (this.#broken) throw this.#broken;
    const id = this.#nextId++;
    this.#sessions.set(id, session);
    if (this.#sessions.size === 1) this.#worker.ref();
    return id;
  }

  send(request: HashRequest, transfer: ArrayBuffer[]): void {
    if (this.#broken) throw this.#broken;
    this.#worker.postMessage(request, transfer);
  }

  close(id: number): void {
    if (!this.#sessions.delete(id)) return;
    if (this.#sessions.size === 0) this.#worker.unref();
  }

  #receive(reply: HashReply): void {
    const session = this.#sessions.get(reply.id);
    if (!session) return;
    if (reply.type === 'ack') {
      session.inFlight--;
      session.free.push(reply.bytes);
      // A chunk larger than a batch sends several at once: the session goes on once it is under the limit.
      if (session.inFlight >= MAX_BATCHES_IN_FLIGHT) return;
      const resume = session.resume;
      session.resume = undefined;
      resume?.();
      return;
    }
    this.close(reply.id);
    session.finish?.resolve(Buffer.from(reply.digest.buffer, reply.digest.byteOffset, reply.digest.byteLength));
  }

  terminate(): Promise<number> {
    return this.#worker.terminate();
  }
}

let thread: HashThread | undefined;

/** The worker, started at the first upload, and again after it stopped. */
function hashThread(): HashThread {
  if (!thread || thread.broken) {
    const started = new HashThread();
    started.onExit = () => {
      if (thread === started) thread = undefined;
    };
    thread = started;
  }
  return thread;
}

/** One upload's SHA-256, computed on the hashing thread. */
export class OffThreadHash {
  readonly #thread = hashThread();
  readonly #id: number;
  readonly #session: Session;
  #batch = Buffer.allocUnsafeSlow(HASH_BATCH_BYTES);
  #filled = 0;
  #failed: Error | undefined;
  #waitReject: ((err: Error) => void) | undefined;
  #done = false;

  constructor() {
    this.#session = {
      inFlight: 0,
      free: [],
      resume: undefined,
      finish: undefined,
      fail: (err) => {
        this.#failed ??= err;
        this.#waitReject?.(err);
        this.#session.finish?.reject(err);
      },
    };
    this.#id = this.#thread.open(this.#session);
  }

  /**
   * Adds the bytes (copied: the caller may reuse or pass on the chunk). Answers a promise when the caller
   * should wait before the next chunk, undefined when it may go on at once.
   */
  update(chunk: Uint8Array): Promise<void> | undefined {
    if (this.#failed) return Promise.reject(this.#failed);
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(chunk.length - at, HASH_BATCH_BYTES - this.#filled);
      this.#batch.set(chunk.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === HASH_BATCH_BYTES) this.#sendBatch('data');
    }
    if (this.#session.inFlight < MAX_BATCHES_IN_FLIGHT) return undefined;
    return new Promise<void>((resolve, reject) => {
      this.#waitReject = reject;
      this.#session.resume = () => {
        this.#waitReject = undefined;
        resolve();
      };
    });
  }

  /** The digest of everything added; the session ends. */
  digest(): Promise<Buffer> {
    if (this.#failed) return Promise.reject(this.#failed);
    this.#done = true;
    return new Promise<Buffer>((resolve, reject) => {
      this.#session.finish = { resolve, reject };
      try {
        this.#sendBatch('end');
      } catch (err) {
        reject(err as Error);
      }
    });
  }

  /** Ends the session without a digest (the upload failed). */
  abort(): void {
    if (this.#done) return;
    this.#done = true;
    this.#thread.close(this.#id);
    if (!this.#thread.broken) this.#thread.send({ type: 'abort', id: this.#id }, []);
  }

  #sendBatch(type: 'data' | 'end'): void {
    const bytes = this.#batch.buffer as ArrayBuffer;
    const length = this.#filled;
    this.#session.inFlight++;
    const reused = type === 'data' ? this.#session.free.pop() : undefined;
    this.#batch = reused ? Buffer.from(reused) : Buffer.allocUnsafeSlow(type === 'end' ? 0 : HASH_BATCH_BYTES);
    this.#filled = 0;
    this.#thread.send({ type, id: this.#id, bytes, length }, [bytes]);
  }
}

/** For tests: the current hashing thread's open sessions, and a way to stop it as a crash would. */
export const hashThreadForTests = () => ({
  sessions: () => thread?.sessions ?? 0,
  terminate: () => thread?.terminate() ?? Promise.resolve(0),
});
