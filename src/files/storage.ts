import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';
import type * as Minio from 'minio';

// node:http and node:https are taken with process.getBuiltinModule, not imported: an ESM import of node:http
// makes Node load its bundled undici (http.WebSocket) at start, tens of milliseconds of every restart.
const { Agent, request: httpRequest } = process.getBuiltinModule('node:http');
const { Agent: HttpsAgent, request: httpsRequest } = process.getBuiltinModule('node:https');

/** Where file bytes live. Keys are `<tenant id>/<file id>`. */
// Loaded only for S3 storage: the embedded default (local disk) need not pay for it on every start.
const loadMinio = () => createRequire(import.meta.url)('minio') as typeof Minio;

export interface FileStorage {
  readonly kind: 'local' | 's3';
  /**
   * Stores what the stream carries under key. When the stream fails (the upload was too large, cut
   * off, malformed), rejects with its error and leaves nothing behind: no object, no temporary file.
   */
  put(key: string, body: Readable): Promise<void>;
  /** Removes the object; one already gone is no error. */
  remove(key: string): Promise<void>;
  /**
   * The store's own pre-signed download URL, or undefined when the service signs and serves downloads
   * itself (local disk).
   */
  presignedUrl(key: string, download: { ttlSeconds: number; contentDisposition: string; contentType: string }): Promise<string | undefined>;
  /** The object's bytes; fails with code ENOENT (local) or NoSuchKey (S3) when it is missing. */
  open(key: string): Promise<Readable>;
  /** Everything stored, temporary files included: tests and the benchmark check that nothing is left. */
  list(): Promise<string[]>;
}

const KEY = /^[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+$/;
function checkKey(key: string): string {
  // Keys are made by the service from ids; anything else is a bug, and must never become a path.
  if (!KEY.test(key)) throw new Error(`not a storage key: ${key}`);
  return key;
}

/**
 * Files under a directory (DATA_DIR/files). Writes go to a `.part` file renamed into place at the end.
 *
 * A put is durable when it resolves, as the row that names the file is once committed: the file's bytes
 * are flushed to the disk before the rename, and the directory after it (with any directory the put
 * created). Without that, a power cut after the answer could leave a recorded file empty, cut short or
 * missing: the kernel writes renames and data back in its own order.
 */
export class LocalStorage implements FileStorage {
  readonly kind = 'local' as const;
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, body: Readable): Promise<void> {
    const path = join(this.root, checkKey(key));
    const dir = join(path, '..');
    const created = await mkdir(dir, { recursive: true });
    const partial = `${path}.${randomUUID()}.part`;
    let renamed = false;
    try {
      // flush: fsync before the close, and a failed fsync fails the put.
      await pipeline(body, createWriteStream(partial, { flags: 'wx', highWaterMark: 256 * 1024, flush: true }));
      await rename(partial, path);
      renamed = true;
      await syncDirectory(dir);
      // The tenant's directory is an entry of the root, flushed by every put: the put that made it may
      // have failed before flushing it, and a directory made since the start is not known to be synced.
      await syncDirectory(this.root);
      // The root itself and any directory above it that this put made (a first upload ever).
      if (created !== undefined && !created.startsWith(`${this.root}${sep}`)) {
        for (let made = this.root; ; made = dirname(made)) {
          await syncDirectory(dirname(made));
          if (made === created || made === dirname(made)) break;
        }
      }
    } catch (err) {
      // Nothing is left behind: not the part, and not a file renamed into place whose flush failed.
      await rm(renamed ? path : partial, { force: true });
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    await rm(join(this.root, checkKey(key)), { force: true });
  }

  async presignedUrl(): Promise<undefined> {
    return undefined;
  }

  async open(key: string): Promise<Readable> {
    const path = join(this.root, checkKey(key));
    await stat(path);
    return createReadStream(path);
  }

  async list(): Promise<string[]> {
    const entries = await readdir(this.root, { recursive: true, withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(this.root.length + 1));
  }
}

/** Flushes a directory's entries (a rename, a new file or directory in it) to the disk. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (err) {
    // Where a directory cannot be synced (Windows: EPERM; some file systems: EINVAL), its entries are
    // as durable as the platform makes them.
    if (!['EPERM', 'EINVAL', 'EISDIR', 'EBADF'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    await handle.close();
  }
}

export interface S3Options {
  bucket: string;
  endPoint: string;
  port?: number | undefined;
  useSSL: boolean;
  region: string;
  accessKey: string;
  secretKey: string;
  pathStyle: boolean;
  /** The store as clients reach it, when not at endPoint (a container network): download URLs are signed for it. */
  publicEndpoint?: URL | undefined;
  /** Where uploads are spooled before they go to the store. */
  spoolDir: string;
}

/**
 * Any S3-compatible store through the minio client. An upload is spooled to a temporary file (counted
 * and hashed on its way there) and then put with its size: a stream of unknown length makes the client
 * list multipart uploads first, which not every store answers (s3rver does not), and a failed upload
 * must not leave a half-made multipart upload behind. The temporary file is removed in every case.
 * The put is a single PUT to a URL the client pre-signs, streamed from the temporary file.
 */
export class S3Storage implements FileStorage {
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly spoolDir: string;
  readonly client: Minio.Client;
  readonly #signer: Minio.Client;
  readonly #agent: InstanceType<typeof Agent>;

  constructor(options: S3Options) {
    this.bucket = options.bucket;
    this.spoolDir = resolve(options.spoolDir);
    const agent = options.useSSL ? new HttpsAgent({ keepAlive: true, maxSockets: 64 }) : new Agent({ keepAlive: true, maxSockets: 64 });
    this.#agent = agent;
    const common = { region: options.region, accessKey: options.accessKey, secretKey: options.secretKey, pathStyle: options.pathStyle };
    this.client = new (loadMinio().Client)({
      endPoint: options.endPoint,
      ...(options.port ? { port: options.port } : {}),
      useSSL: options.useSSL,
      // With the region known, signing a URL needs no request to the store.
      region: options.region,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      pathStyle: options.pathStyle,
      transportAgent: agent,
    });
    const pub = options.publicEndpoint;
    // Signing is offline (the region is known), so the signer never connects to its endpoint.
    this.#signer = pub
      ? new (loadMinio().Client)({ ...common, endPoint: pub.hostname, useSSL: pub.protocol === 'https:', ...(pub.port ? { port: Number(pub.port) } : {}) })
      : this.client;
  }

  async put(key: string, body: Readable): Promise<void> {
    checkKey(key);
    await mkdir(this.spoolDir, { recursive: true });
    const spooled = join(this.spoolDir, `${randomUUID()}.upload`);
    try {
      await pipeline(body, createWriteStream(spooled, { flags: 'wx', highWaterMark: 256 * 1024 }));
      const { size } = await stat(spooled);
      await this.#putFile(key, spooled, size);
    } finally {
      await rm(spooled, { force: true });
    }
  }

  // The client's putObject reads a body below its part size whole into memory to sign its hash: 50
  // uploads at once would hold a gigabyte. A pre-signed PUT (unsigned payload) streams from the spool.
  async #putFile(key: string, path: string, size: number): Promise<void> {
    const url = new URL(await this.client.presignedPutObject(this.bucket, key, 600));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    let sent: Promise<void> = Promise.resolve();
    try {
      await new Promise<void>((resolve, reject) => {
        const req = send(url, { method: 'PUT', agent: this.#agent, headers: { 'Content-Length': String(size), 'Content-Type': 'application/octet-stream' } }, (res) => {
          const answer: Buffer[] = [];
          res.on('data', (c: Buffer) => answer.push(c));
          res.on('end', () => {
            if (res.statusCode === 200) return resolve();
            // Refused, perhaps before the whole body was read: the rest is not sent (a store that stopped
            // reading would hold the sender's writes, and the put, forever), the socket not reused.
            req.destroy();
            reject(new Error(`S3 PUT ${key} answered ${res.statusCode}: ${Buffer.concat(answer).toString().slice(0, 500)}`));
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        sent = sendFile(path, req).catch((err: unknown) => {
          req.destroy(err as Error);
          reject(err as Error);
        });
      });
    } finally {
      // The spool file is closed before the put ends (and its caller removes it).
      await sent;
    }
  }

  async remove(key: string): Promise<void> {
    await this.client.removeObject(this.bucket, checkKey(key));
  }

  async presignedUrl(key: string, download: { ttlSeconds: number; contentDisposition: string; contentType: string }): Promise<string> {
    // The store serves the download, on its own origin; these make it an attachment of the type given
    // (FileService gives application/octet-stream for anything a browser could run: storeDownloadType).
    return this.#signer.presignedGetObject(this.bucket, checkKey(key), download.ttlSeconds, {
      'response-content-disposition': download.contentDisposition,
      'response-content-type': download.contentType,
    });
  }

  async open(key: string): Promise<Readable> {
    return this.client.getObject(this.bucket, checkKey(key));
  }

  async list(): Promise<string[]> {
    const keys: string[] = [];
    for await (const item of this.client.listObjectsV2(this.bucket, '', true)) {
      if (item.name) keys.push(item.name);
    }
    const spooled = await readdir(this.spoolDir).catch(() => [] as string[]);
    return [...keys, ...spooled.map((name) => `spool/${name}`)];
  }
}

/** Bytes per read of a spooled upload. */
const SPOOL_CHUNK_BYTES = 256 * 1024;

/**
 * Writes a file's bytes into a stream and ends it, through two buffers filled in turn, each read into only
 * once the stream has taken its last write. A read stream makes a fresh buffer per read, a gigabyte of
 * them for 50 uploads of 20 MiB, each to be collected: reusing two per upload costs the service less CPU
 * per MB stored on S3 (bench:files, interleaved runs).
 */
async function sendFile(path: string, out: Writable): Promise<void> {
  // A request whose connection the store dropped does not always call back the write it held: waiting for
  // that call alone left this function, and the spool file's handle, waiting for ever, until the garbage
  // collector closed the handle, which Node 26 makes an uncaught error. Its close ends the wait too.
  const closed = new Promise<never>((_, reject) => {
    if (out.destroyed) reject(new Error('The request to the store was closed'));
    else out.once('close', () => reject(new Error('The request to the store was closed before its body was sent')));
  });
  closed.catch(() => undefined);
  const file = await open(path, 'r');
  try {
    const buffers = [Buffer.allocUnsafeSlow(SPOOL_CHUNK_BYTES), Buffer.allocUnsafeSlow(SPOOL_CHUNK_BYTES)];
    let written: Promise<void> = Promise.resolve();
    for (let turn = 0; ; turn++) {
      const buffer = buffers[turn % 2]!;
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      // The other buffer's write: it must be taken before that buffer is read into, and one write at a
      // time. A request destroyed under its writes calls them back with ERR_STREAM_DESTROYED, or closes.
      await Promise.race([written, closed]);
      if (bytesRead === 0) break;
      written = new Promise<void>((resolve, reject) => {
        out.write(buffer.subarray(0, bytesRead), (err) => (err ? reject(err) : resolve()));
      });
      // Awaited at the next turn; a failure while the next read runs is not unhandled meanwhile.
      written.catch(() => undefined);
    }
    // The store's answer says whether it took the whole body.
    out.end();
  } finally {
    await file.close();
  }
}

/**
 * The storage STORAGE_URL names: unset, local disk under DATA_DIR/files; `s3://bucket?endpoint=…&region=…`
 * (and `public_endpoint=…` when clients reach the store at another address) an S3-compatible store, with the credentials in the URL's user info or AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY.
 */
export function storageFromConfig(config: { storageUrl?: string | undefined; dataDir: string }, env: NodeJS.ProcessEnv = process.env): FileStorage {
  if (!config.storageUrl) return new LocalStorage(join(config.dataDir, 'files'));
  return new S3Storage(parseS3Url(config.storageUrl, { spoolDir: join(config.dataDir, 'spool'), env }));
}

export function parseS3Url(value: string, options: { spoolDir: string; env?: NodeJS.ProcessEnv }): S3Options {
  const url = new URL(value);
  if (url.protocol !== 's3:') throw new Error('STORAGE_URL must be s3://bucket?endpoint=…');
  const bucket = url.hostname;
  if (!bucket) throw new Error('STORAGE_URL names no bucket');
  const env = options.env ?? {};
  const endpointParam = url.searchParams.get('endpoint');
  const endpoint = new URL(endpointParam ?? 'https://s3.amazonaws.com');
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') throw new Error('STORAGE_URL endpoint must be http:// or https://');
  const publicParam = url.searchParams.get('public_endpoint');
  const publicEndpoint = publicParam ? new URL(publicParam) : undefined;
  const accessKey = decodeURIComponent(url.username) || env.AWS_ACCESS_KEY_ID;
  const secretKey = decodeURIComponent(url.password) || env.AWS_SECRET_ACCESS_KEY;
  if (!accessKey || !secretKey) throw new Error('STORAGE_URL needs credentials: s3://KEY:SECRET@bucket, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  return {
    bucket,
    endPoint: endpoint.hostname,
    port: endpoint.port ? Number(endpoint.port) : undefined,
    useSSL: endpoint.protocol === 'https:',
    region: url.searchParams.get('region') ?? env.AWS_REGION ?? 'us-east-1',
    accessKey,
    secretKey,
    // Self-hosted stores (MinIO, s3rver) are addressed by path; AWS by virtual host.
    pathStyle: endpointParam !== null,
    publicEndpoint,
    spoolDir: options.spoolDir,
  };
}
