import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import busboy from 'busboy';
import { AppError } from '../shared/errors.ts';
import { OffThreadHash } from './offthread-hash.ts';

// Reads a multipart upload as a stream: one file, in the part named `file`, plus a few named text
// fields. Every way the body can be wrong ends the upload at once with an AppError naming it; the sink
// that stores the file sees its stream fail, cleans up, and only then is the error answered.

/** Bytes kept from the start of a file for sniffing its type (file-type reads at most this many). */
export const SNIFF_BYTES = 4100;

/** Buffer size of each stage of an upload: larger than the 16 KiB default (fewer, bigger writes), small enough for 50 uploads at once. */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;

export interface Measured {
  size: number;
  sha256: Buffer;
  /** The first SNIFF_BYTES bytes. */
  head: Buffer;
}

/**
 * Counts, hashes and keeps the head of what flows through; past maxBytes it fails with 413. The hashing
 * runs on a worker thread (src/files/offthread-hash.ts); a chunk waits only while the worker is behind.
 */
export class MeteredStream extends Transform {
  readonly #maxBytes: number;
  /** Opened at the first byte (or at the end, for an empty file): a stream never fed holds no session. */
  #hash: OffThreadHash | undefined;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  #size = 0;
  #digest: Buffer | undefined;

  constructor(maxBytes: number) {
    super({ highWaterMark: UPLOAD_CHUNK_BYTES });
    this.#maxBytes = maxBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#size += chunk.length;
    if (this.#size > this.#maxBytes) return done(tooLarge(this.#maxBytes));
    let wait: Promise<void> | undefined;
    try {
      this.#hash ??= new OffThreadHash();
      wait = this.#hash.update(chunk);
    } catch (err) {
      return done(err as Error);
    }
    if (this.#headBytes < SNIFF_BYTES) {
      const part = chunk.subarray(0, SNIFF_BYTES - this.#headBytes);
      this.#head.push(Buffer.from(part));
      this.#headBytes += part.length;
    }
    if (!wait) return done(null, chunk);
    wait.then(
      () => done(null, chunk),
      (err: Error) => done(err),
    );
  }

  override _flush(done: TransformCallback): void {
    let hash: OffThreadHash;
    try {
      hash = this.#hash ??= new OffThreadHash();
    } catch (err) {
      return done(err as Error);
    }
    hash.digest().then(
      (digest) => {
        this.#digest = digest;
        done();
      },
      (err: Error) => done(err),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#hash?.abort();
    callback(error);
  }

  /** What went through; only once the stream has ended. */
  measured(): Measured {
    if (!this.#digest) throw new Error('MeteredStream.measured() before the stream ended');
    return { size: this.#size, sha256: this.#digest, head: Buffer.concat(this.#head) };
  }
}

export const tooLarge = (maxBytes: number) =>
  new AppError('ERR_PAYLOAD_TOO_LARGE', `The file is larger than ${maxBytes} bytes (${Math.round(maxBytes / 1048576)} MiB)`);

const invalid = (path: string, message: string) =>
  new AppError('ERR_VALIDATION', `The upload is not valid: ${message}`, { fieldErrors: [{ path, message }] });

export interface UploadOptions {
  maxBytes: number;
  /** Text fields the form may carry besides the file. */
  fields: readonly string[];
}

export interface IncomingFile {
  /** The part's filename, as the client sent it. */
  filename: string;
  /** The file's bytes, counted and hashed; fails (413, or whatever ended the upload) instead of ending. */
  stream: MeteredStream;
}

/** Multipart framing, the part headers and a short field or two: what a body may carry besides the file. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/**
 * Reads the request's multipart body. `sink` gets the file as soon as its part starts and must consume
 * the stream (storing it). Resolves when the body is read and the sink is done; rejects with the first
 * problem, after the sink has settled (so whatever it stored is already removed).
 */
export function receiveUpload<T>(
  req: IncomingMessage,
  options: UploadOptions,
  sink: (file: IncomingFile) => Promise<T>,
): Promise<{ result: T; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > options.maxBytes + MULTIPART_OVERHEAD_BYTES) {
      reject(tooLarge(options.maxBytes));
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        highWaterMark: UPLOAD_CHUNK_BYTES,
        fileHwm: UPLOAD_CHUNK_BYTES,
        // Busboy says 'limit' on reaching fileSize, so one byte past the largest file allowed.
        limits: { files: 1, fileSize: options.maxBytes + 1, fields: options.fields.length, fieldSize: 1024, headerPairs: 20 },
      });
    } catch (err) {
      reject(invalid('/body', `the multipart body cannot be read (${(err as Error).message})`));
      return;
    }
    const fields: Record<string, string> = {};
    let file: MeteredStream | undefined;
    let stored: Promise<T> | undefined;
    let failed = false;

    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      // Reading stops until the answer is out (the client's sending stalls); then the rest of the body is
      // read and dropped, so the client gets the answer instead of a reset.
      req.pause();
      const res = (req as IncomingMessage & { res?: ServerResponse }).res;
      if (res && !res.writableFinished) res.once('close', () => req.resume());
      else req.resume();
      file?.destroy(error as Error);
      (stored ?? Promise.resolve()).then(
        () => reject(error),
        () => reject(error),
      );
    };

    parser.on('file', (name, stream, info) => {
      // Busboy goes on with the chunk it is in after a failure: a file part after a bad field still comes.
      if (failed) {
        stream.resume();
        return;
      }
      if (name !== 'file') {
        stream.resume();
        return fail(invalid(`/body/${name}`, `unexpected file part "${name}": send the file in the part named "file"`));
      }
      const metered = new MeteredStream(options.maxBytes);
      // The sink may not listen yet when the upload fails (it is making a directory): its pipeline
      // still sees the error, which must not also go unhandled here.
      metered.on('error', () => undefined);
      file = metered;
      stream.on('limit', () => fail(tooLarge(options.maxBytes)));
      stream.on('error', (err: Error) => fail(invalid('/body', `the multipart body is malformed or cut short (${err.message})`)));
      stream.pipe(metered);
      stored = sink({ filename: info.filename ?? '', stream: metered });
      stored.catch(fail);
    });
    parser.on('field', (name, value, info) => {
      if (name === 'file') return fail(invalid('/body/file', 'the part named "file" must be a file (a part with a filename)'));
      if (!options.fields.includes(name)) return fail(invalid(`/body/${name}`, `unexpected part "${name}"`));
      if (info.valueTruncated) return fail(invalid(`/body/${name}`, 'is too long'));
      fields[name] = value;
    });
    parser.on('filesLimit', () => fail(invalid('/body/file', 'only one file per upload')));
    parser.on('fieldsLimit', () => fail(invalid('/body', `too many parts: only "file" and ${options.fields.map((f) => `"${f}"`).join(', ')}`)));
    parser.on('error', (err: Error) => fail(invalid('/body', `the multipart body is malformed or cut short (${err.message})`)));
    parser.on('close', () => {
      if (failed) return;
      if (!stored) return fail(invalid('/body/file', 'the part named "file" is missing'));
      stored.then((result) => resolve({ result, fields }), fail);
    });
    // A client gone before its body ended leaves a file stream that would never end.
    req.on('close', () => {
      if (!req.complete) fail(invalid('/body', 'the upload was cut off before its end'));
    });
    req.pipe(parser);
  });
}
