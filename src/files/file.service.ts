import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { components } from '../../generated/api.ts';
import type { Database, Tx } from '../db/database.ts';
import type { FileRow } from '../db/schema.ts';
import type { Principal } from '../shared/principal.ts';
import { AppError, forbidden, invalidInput, notFound } from '../shared/errors.ts';
import { CONVERSATION_ID, newId } from '../shared/ids.ts';
import * as repo from './file.repository.ts';
import { type FileStorage, LocalStorage } from './storage.ts';
import type { IncomingFile, Measured, UploadOptions } from './upload-stream.ts';

type S = components['schemas'];

/** 20 MiB: this many bytes are accepted, one more is 413. */
export const MAX_FILE_BYTES = 20 * 1024 * 1024;
/** How long a download URL works. */
export const DOWNLOAD_TTL_SECONDS = 600;

/**
 * Reads an upload (src/files/upload-stream.ts receiveUpload, bound to the request): the handler binds
 * it, so the service never sees HTTP.
 */
export type UploadSource = <T>(options: UploadOptions, sink: (file: IncomingFile) => Promise<T>) => Promise<{ result: T; fields: Record<string, string> }>;

export interface Download {
  stream: Readable;
  headers: Record<string, string>;
}

export interface FileServiceDeps {
  database: Database;
  storage: FileStorage;
  /** Signs the service's own download links (local storage). */
  signingKey: Buffer | string;
  /** The plan's storage limit (billing): a 402 before the upload is recorded. */
  limits?: { assertStorageAvailable(trx: Tx, tenantId: string, bytes: number): Promise<void> } | undefined;
}

/** For other features' work inside their transactions (billing's usage and storage limit): the tenant's stored bytes. */
export const storageUsed = (trx: Tx, tenantId: string): Promise<number> => repo.storageBytes(trx, tenantId);

export const invalidAttachment = (id: string) => new AppError('ERR_INVALID_ATTACHMENT', `The file ${id} is attached in another conversation`);

/** The name as shown and sent back in Content-Disposition: no path, no control characters, at most 255. */
export function cleanFileName(raw: string): string {
  const base = raw.split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const name = base.replace(/[\u0000-\u001f\u007f"]/g, '').trim().slice(0, 255);
  return name === '' || name === '.' || name === '..' ? 'file' : name;
}

/** `attachment`, with the name for every browser: an ASCII fallback and the UTF-8 original (RFC 6266). */
export function attachmentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/[\\"]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * The type of the bytes, never the one the client claims: a known format by its signature, else UTF-8
 * text as text/plain, else application/octet-stream. HTML and SVG are text here, and every download is
 * an attachment with nosniff besides.
 */
export async function sniffContentType(head: Buffer): Promise<string> {
  // Loaded at the first upload, not at start: only uploads need it.
  const { fileTypeFromBuffer } = await import('file-type');
  const found = await fileTypeFromBuffer(head);
  if (found) return found.mime;
  if (head.length > 0 && looksLikeText(head)) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}

/**
 * The type a pre-signed store link serves the bytes as. The store cannot send `nosniff` nor a sandbox, so
 * only types a browser shows without running anything keep theirs: images (not SVG), audio, video, PDF.
 * Everything else, text/plain included (HTML, SVG, XML and JavaScript are sniffed as text), is served as
 * application/octet-stream.
 */
export function storeDownloadType(contentType: string): string {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const inert = (type.startsWith('image/') && !type.includes('svg')) || type.startsWith('audio/') || type.startsWith('video/') || type === 'application/pdf';
  return inert ? type : 'application/octet-stream';
}

function looksLikeText(head: Buffer): boolean {
  try {
    // stream: true tolerates a character cut at the end of the head.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    // eslint-disable-next-line no-control-regex
    return !/[\u0000-\u0008\u000e-\u001a\u001c-\u001f]/.test(text);
  } catch {
    return false;
  }
}

const uploaderOf = (principal: Principal): { type: 'user' | 'api_key' | 'visitor'; id: string } =>
  principal.kind === 'user'
    ? { type: 'user', id: principal.userId }
    : principal.kind === 'api_key'
      ? { type: 'api_key', id: principal.keyId }
      : { type: 'visitor', id: principal.visitorId };

export function toFileDto(row: FileRow, viewer?: { visitorId: string }): S['File'] {
  // A visitor sees that a member sent a file, not which member.
  const hideUploader = viewer !== undefined && row.uploaded_by_type !== 'visitor';
  return {
    id: row.id,
    name: row.name,
    content_type: row.content_type,
    size: row.size,
    sha256: Buffer.from(row.sha256).toString('hex'),
    conversation_id: row.conversation_id,
    uploaded_by: { type: row.uploaded_by_type, id: hideUploader ? null : row.uploaded_by_id },
    created_at: row.created_at.toISOString(),
  };
}

export const toAttachment = (row: FileRow): S['Attachment'] => ({ id: row.id, name: row.name, content_type: row.content_type, size: row.size });

/**
 * Attaches files to a message of the conversation the caller has locked. Members may attach any file of
 * the tenant not yet in another conversation; a visitor only their own uploads. Unknown files (and other
 * tenants', which the tenant's role cannot see) are 404; a file of another conversation is 422.
 * Answers the attachments in the order given.
 */
export async function attachFiles(
  trx: Tx,
  conversationId: string,
  ids: readonly string[],
  attacher: { kind: 'member' } | { kind: 'visitor'; visitorId: string },
  now: Date,
): Promise<S['Attachment'][]> {
  if (ids.length === 0) return [];
  const rows = new Map((await repo.lockFiles(trx, ids)).map((r) => [r.id, r]));
  for (const id of ids) {
    const row = rows.get(id);
    if (!row) throw notFound(`File ${id}`);
    if (attacher.kind === 'visitor' && !(row.uploaded_by_type === 'visitor' && row.uploaded_by_id === attacher.visitorId)) throw notFound(`File ${id}`);
    if (row.conversation_id !== null && row.conversation_id !== conversationId) throw invalidAttachment(id);
  }
  await repo.markAttached(trx, ids, conversationId, now);
  return ids.map((id) => toAttachment(rows.get(id)!));
}

/** The attachments of stored messages, by file id; files deleted since are left out. */
export async function attachmentsOf(trx: Tx, messages: readonly { attachments: string[] }[]): Promise<Map<string, S['Attachment']>> {
  const ids = [...new Set(messages.flatMap((m) => m.attachments))];
  const rows = await repo.findFiles(trx, ids);
  return new Map(rows.map((r) => [r.id, toAttachment(r)]));
}

export class FileService {
  readonly #database: Database;
  readonly storage: FileStorage;
  readonly #signingKey: Buffer | string;
  readonly #limits: FileServiceDeps['limits'];

  constructor(deps: FileServiceDeps) {
    this.#limits = deps.limits;
    this.#database = deps.database;
    this.storage = deps.storage;
    this.#signingKey = deps.signingKey;
  }

  /**
   * Streams the upload into storage (counted, hashed, refused past 20 MiB), then records it. Whatever
   * fails after the first byte was stored removes the object again.
   */
  async upload(principal: Principal, source: UploadSource): Promise<S['File']> {
    const id = newId('file');
    const key = `${principal.tenantId}/${id}`;
    let received: { name: string; measured: Measured; fields: Record<string, string> };
    let stored = false;
    try {
      const { result, fields } = await source({ maxBytes: MAX_FILE_BYTES, fields: ['conversation_id'] }, async (file) => {
        await this.storage.put(key, file.stream);
        stored = true;
        return { name: cleanFileName(file.filename), measured: file.stream.measured() };
      });
      received = { ...result, fields };
    } catch (err) {
      // A failed put left nothing; a problem found after the file part (a second file, a stray part)
      // comes after the object was stored.
      if (stored) await this.#discard(key);
      throw err;
    }
    try {
      const { name, measured, fields } = received;
      if (measured.size === 0) throw invalidInput({ field: 'file', message: 'The file is empty' });
      const conversationId = fields.conversation_id;
      if (conversationId !== undefined && !CONVERSATION_ID.test(conversationId)) {
        throw invalidInput({ field: 'conversation_id', message: 'must be conv_ followed by a UUIDv7' });
      }
      const contentType = await sniffContentType(measured.head);
      const uploader = uploaderOf(principal);
      const row = await this.#database.withTenant(principal.tenantId, async (trx) => {
        if (conversationId !== undefined) {
          const conversation = await repo.findUploadConversation(trx, conversationId);
          if (!conversation || (principal.kind === 'visitor' && conversation.visitor_id !== principal.visitorId)) throw notFound('Conversation');
        }
        await this.#limits?.assertStorageAvailable(trx, principal.tenantId, measured.size);
        return repo.insertFile(trx, {
          id,
          tenant_id: principal.tenantId,
          conversation_id: conversationId ?? null,
          name,
          content_type: contentType,
          size: measured.size,
          sha256: measured.sha256,
          storage_key: key,
          uploaded_by_type: uploader.type,
          uploaded_by_id: uploader.id,
        });
      });
      return toFileDto(row, principal.kind === 'visitor' ? { visitorId: principal.visitorId } : undefined);
    } catch (err) {
      await this.#discard(key);
      throw err;
    }
  }

  // The upload's own error is what the client needs to hear, even if the store is away as well.
  async #discard(key: string): Promise<void> {
    await this.storage.remove(key).catch(() => undefined);
  }

  /** Metadata and a download URL for 10 minutes. `baseUrl`: the API's own, for local-disk links. */
  async get(principal: Principal, id: string, baseUrl: string): Promise<S['FileWithUrl']> {
    const row = await this.#database.withTenant(principal.tenantId, async (trx) => {
      const found = await repo.findFile(trx, id);
      if (!found) return undefined;
      if (principal.kind === 'visitor' && !(await repo.visitorMaySee(trx, found, principal.visitorId))) return undefined;
      return found;
    });
    if (!row) throw notFound('File');
    // Whole seconds: the link's `expires` and the answer's expires_at say the same instant.
    const expiresAt = new Date((Math.floor(Date.now() / 1000) + DOWNLOAD_TTL_SECONDS) * 1000);
    const url =
      (await this.storage.presignedUrl(row.storage_key, {
        ttlSeconds: DOWNLOAD_TTL_SECONDS,
        contentDisposition: attachmentDisposition(row.name),
        contentType: storeDownloadType(row.content_type),
      })) ?? this.#localUrl(baseUrl, row.id, expiresAt);
    const dto = toFileDto(row, principal.kind === 'visitor' ? { visitorId: principal.visitorId } : undefined);
    return { ...dto, url, expires_at: expiresAt.toISOString() };
  }

  async remove(principal: Principal, id: string): Promise<S['Deleted']> {
    await this.#database.withTenant(principal.tenantId, async (trx) => {
      const [row] = await repo.lockFiles(trx, [id]);
      if (!row) throw notFound('File');
      // The object goes first: if its removal fails the row stays and the delete can be retried;
      // a failed commit after it leaves a row whose bytes are gone, which a retry deletes.
      await this.storage.remove(row.storage_key);
      await repo.deleteFile(trx, id);
    });
    return { id, deleted: true };
  }

  /** The service's own signed link (local storage): the signature is the permission, checked here. */
  async download(id: string, expires: number, signature: string): Promise<Download> {
    if (!this.#signatureMatches(id, expires, signature)) throw forbidden('The download link is not valid');
    if (expires * 1000 < Date.now()) throw forbidden('The download link has expired: ask for a new one');
    if (this.storage.kind !== 'local') throw notFound('File');
    // The link names no tenant; its signature is what lets this one lookup cross tenants.
    const row = await this.#database.asSystem((trx) => repo.findFile(trx, id));
    if (!row) throw notFound('File');
    let stream: Readable;
    try {
      stream = await this.storage.open(row.storage_key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw notFound('File');
      throw err;
    }
    return {
      stream,
      headers: {
        'Content-Type': row.content_type,
        'Content-Length': String(row.size),
        'Content-Disposition': attachmentDisposition(row.name),
        'X-Content-Type-Options': 'nosniff',
        // Even opened directly, the bytes are a sandboxed document that can run nothing.
        'Content-Security-Policy': "default-src 'none'; sandbox",
        'Cache-Control': 'private, no-store',
      },
    };
  }

  /** The tenant's stored bytes (billing's usage). */
  async storageBytes(tenantId: string): Promise<number> {
    return this.#database.withTenant(tenantId, (trx) => repo.storageBytes(trx, tenantId));
  }

  #sign(id: string, expires: number): Buffer {
    return createHmac('sha256', this.#signingKey).update(`file-download\n${id}\n${expires}`).digest();
  }

  #signatureMatches(id: string, expires: number, signature: string): boolean {
    const given = Buffer.from(signature, 'base64url');
    const expected = this.#sign(id, expires);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #localUrl(baseUrl: string, id: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    return `${baseUrl}/v1/files/${id}/content?expires=${expires}&signature=${this.#sign(id, expires).toString('base64url')}`;
  }
}

/** Storage for an app built without one (tests of other features): local disk in the temp directory. */
export const defaultFileDeps = () => ({ storage: new LocalStorage(join(tmpdir(), 'customer-chat-files')), signingKey: randomBytes(32) });

/** The signing key of download links, derived from the JWT secret every instance shares. */
export const fileSigningKey = (jwtSecret: string) => createHmac('sha256', jwtSecret).update('customer-chat file download links').digest();

/**
 * Removes files never attached within `ageMs` of their upload, object first, then row, in batches; a batch
 * holds its rows locked and skips rows a request holds. Answers how many files and bytes went.
 */
export async function deleteOrphanFiles(
  database: Database,
  storage: FileStorage,
  options: { ageMs: number; batch: number; signal: AbortSignal },
): Promise<{ deleted: number; bytes: number }> {
  let deleted = 0;
  let bytes = 0;
  for (;;) {
    const rows = await database.asSystem(async (trx) => {
      const orphans = await repo.lockOrphans(trx, options.ageMs, options.batch);
      for (const row of orphans) await storage.remove(row.storage_key);
      await repo.deleteFiles(trx, orphans.map((r) => r.id));
      return orphans;
    });
    deleted += rows.length;
    bytes += rows.reduce((sum, r) => sum + r.size, 0);
    if (rows.length < options.batch || options.signal.aborted) return { deleted, bytes };
  }
}
