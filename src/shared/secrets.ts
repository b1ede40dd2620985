import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// Outside production a missing JWT_SECRET is generated once and kept under DATA_DIR, so tokens survive
// restarts of a development server. Production refuses to start without one (see config.ts).
export async function resolveJwtSecret(configured: string | undefined, dataDir: string): Promise<string> {
  if (configured) return configured;
  const file = join(dataDir, 'jwt-secret');
  const existing = await readFile(file, 'utf8').catch(() => '');
  if (existing.trim().length >= 32) return existing.trim();
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  await writeFile(file, secret, { mode: 0o600 });
  return secret;
}
