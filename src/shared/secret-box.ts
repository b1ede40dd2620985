import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that this box cannot open: sealed under another key, or altered. */
export class SealedSecretError extends Error {
  constructor(message = 'the sealed secret cannot be opened with this key (SECRETS_KEY changed?) or was altered') {
    super(message);
    this.name = 'SealedSecretError';
  }
}

/**
 * Seals secrets the service must use but never shows again (an llm bot's provider API key), so that a
 * copy of the database (a backup, a replica, a leaked dump) does not carry them in the clear. AES-256-GCM,
 * with a key derived by HKDF-SHA256 from SECRETS_KEY (or JWT_SECRET when that is unset). A sealed value is
 * `sealed:v1:` and the base64url of IV, tag and ciphertext; a value stored before sealing existed has no
 * prefix and opens as itself.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(keyMaterial: string) {
    if (keyMaterial.length === 0) throw new Error('SecretBox needs key material');
    this.#key = Buffer.from(hkdfSync('sha256', keyMaterial, 'customer-chat', 'secret-box v1', 32));
  }

  static isSealed(value: string): boolean {
    return value.startsWith(PREFIX);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  open(value: string): string {
    if (!SecretBox.isSealed(value)) return value;
    const raw = Buffer.from(value.slice(PREFIX.length), 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new SealedSecretError('the sealed secret is cut short');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedSecretError();
    }
  }
}
