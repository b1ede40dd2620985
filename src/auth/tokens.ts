import { createHash, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { AppError } from '../shared/errors.ts';

export const ACCESS_TOKEN_TTL_SECONDS = 900;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600 * 1000;
const ISSUER = 'customer-chat';
const AUDIENCE = 'customer-chat-api';
const USER_ID = /^usr_[0-9a-f-]{36}$/;
const TENANT_ID = /^tn_[0-9a-f-]{36}$/;
// The login's refresh family (ses_...), looked up on every request.
const SESSION_ID = /^ses_[0-9a-f-]{36}$/;
const MAX_VERIFIED_TOKENS = 10_000;

export interface AccessClaims {
  userId: string;
  tenantId: string;
  sessionId: string;
}

export class TokenService {
  // A key object, made once: given a string, jsonwebtoken first tries it as a PEM public key at every
  // verify, and that failed parse (an exception) was a visible share of a cheap request's CPU.
  readonly #secret: KeyObject;
  readonly #now: () => number;
  /**
   * Access tokens already verified, with their claims and expiry: a client sends the same token with every
   * request for its 15 minutes, and checking its HMAC and claims again each time showed in a GET's profile.
   * Only a token that passed the full check gets here; its expiry is still checked at every use, against
   * the same clock. Revocation is not the token's business (the session check after it decides).
   */
  readonly #verified = new Map<string, AccessClaims & { exp: number }>();

  constructor(secret: string, now: () => number = Date.now) {
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
    this.#now = now;
  }

  signAccessToken(claims: AccessClaims): string {
    // iat from our clock (exp follows it), so a service built with another clock signs consistently.
    const iat = Math.floor(this.#now() / 1000);
    return jwt.sign({ tid: claims.tenantId, sid: claims.sessionId, iat }, this.#secret, {
      algorithm: 'HS256',
      subject: claims.userId,
      issuer: ISSUER,
      audience: AUDIENCE,
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    });
  }

  signVisitorToken(claims: VisitorClaims): string {
    return signVisitorToken(this.#secret, claims, this.#now());
  }

  verifyVisitorToken(token: string): VisitorClaims & { expiresAt: number } {
    try {
      const payload = jwt.verify(token, this.#secret, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: VISITOR_AUDIENCE,
        clockTimestamp: Math.floor(this.#now() / 1000),
      }) as jwt.JwtPayload;
      // exp too: jsonwebtoken checks it only when it is there, and a token without one would never end.
      if (
        typeof payload.exp === 'number' &&
        typeof payload.sub === 'string' &&
        VISITOR_ID.test(payload.sub) &&
        typeof payload.tid === 'string' &&
        TENANT_ID.test(payload.tid) &&
        (payload.wid === undefined || (typeof payload.wid === 'string' && WIDGET_ID.test(payload.wid))) &&
        (payload.cid === undefined || (typeof payload.cid === 'string' && CONTACT_ID.test(payload.cid)))
      ) {
        return {
          visitorId: payload.sub,
          tenantId: payload.tid,
          widgetId: typeof payload.wid === 'string' ? payload.wid : undefined,
          contactId: typeof payload.cid === 'string' ? payload.cid : undefined,
          expiresAt: payload.exp * 1000,
        };
      }
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) throw new AppError('ERR_TOKEN_EXPIRED', 'The visitor token has expired');
    }
    throw new AppError('ERR_UNAUTHENTICATED', 'The visitor token is not valid');
  }

  /** When an access token expires (ms since the epoch), read without verifying: verify first. */
  expiryOf(token: string): number | undefined {
    const exp = (jwt.decode(token) as jwt.JwtPayload | null)?.exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  }

  /** Whether a token is meant for visitors (its audience), read without verifying. */
  isVisitorToken(token: string): boolean {
    return (jwt.decode(token) as jwt.JwtPayload | null)?.aud === VISITOR_AUDIENCE;
  }

  verifyAccessToken(token: string): AccessClaims {
    const known = this.#verified.get(token);
    if (known) {
      // As jsonwebtoken judges it: expired from the second of exp on.
      if (Math.floor(this.#now() / 1000) < known.exp) return { userId: known.userId, tenantId: known.tenantId, sessionId: known.sessionId };
      this.#verified.delete(token);
    }
    let payload: jwt.JwtPayload;
    try {
      payload = jwt.verify(token, this.#secret, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: AUDIENCE,
        clockTimestamp: Math.floor(this.#now() / 1000),
      }) as jwt.JwtPayload;
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError) {
        throw new AppError('ERR_TOKEN_EXPIRED', 'The access token has expired; refresh it and retry');
      }
      throw new AppError('ERR_UNAUTHENTICATED', 'The access token is not valid');
    }
    const { sub, tid, sid, exp } = payload;
    // exp too: jsonwebtoken checks it only when it is there, and a token without one would never end.
    if (
      typeof exp !== 'number' ||
      typeof sub !== 'string' ||
      !USER_ID.test(sub) ||
      typeof tid !== 'string' ||
      !TENANT_ID.test(tid) ||
      typeof sid !== 'string' ||
      !SESSION_ID.test(sid)
    ) {
      throw new AppError('ERR_UNAUTHENTICATED', 'The access token is not valid');
    }
    // Forgotten wholesale past a bound: a flood of distinct valid tokens costs verifies, not memory.
    if (this.#verified.size >= MAX_VERIFIED_TOKENS) this.#verified.clear();
    this.#verified.set(token, { userId: sub, tenantId: tid, sessionId: sid, exp });
    return { userId: sub, tenantId: tid, sessionId: sid };
  }
}

export const VISITOR_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
const VISITOR_AUDIENCE = 'visitor';
const VISITOR_ID = /^vis_[0-9a-f-]{36}$/;
const WIDGET_ID = /^wgt_[0-9a-f-]{36}$/;
const CONTACT_ID = /^ct_[0-9a-f-]{36}$/;

export interface VisitorClaims {
  visitorId: string;
  tenantId: string;
  /** The widget the session was started on: its domains and identity rule apply to every call. */
  widgetId?: string | undefined;
  /** The contact whose identity was verified with the widget's secret, if any. */
  contactId?: string | undefined;
}

/** A visitor's token: the widget's credential, audience `visitor`, 30 days. */
export function signVisitorToken(secret: string | KeyObject, claims: VisitorClaims, now = Date.now()): string {
  const extra = { ...(claims.widgetId ? { wid: claims.widgetId } : {}), ...(claims.contactId ? { cid: claims.contactId } : {}) };
  return jwt.sign({ tid: claims.tenantId, ...extra, iat: Math.floor(now / 1000) }, secret, {
    algorithm: 'HS256',
    subject: claims.visitorId,
    issuer: ISSUER,
    audience: VISITOR_AUDIENCE,
    expiresIn: VISITOR_TOKEN_TTL_SECONDS,
  });
}

/** An opaque secret token (256 random bits) and the hash under which it is stored. */
export function newOpaqueToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashOpaqueToken(token) };
}

export const hashOpaqueToken = (token: string): Buffer => createHash('sha256').update(token).digest();
