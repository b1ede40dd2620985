import pino from 'pino';
import type { Express } from 'express';
import { type AppDeps, type AppOptions, createApp } from '../../src/app.ts';
import { PasswordHasher } from '../../src/auth/password.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { SessionCache } from '../../src/auth/session-cache.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { type Mailer, type MailMessage } from '../../src/mail/mailer.ts';
import { SecretBox } from '../../src/shared/secret-box.ts';

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

/** Mail the shared app sent, newest last. Tests that need real SMTP start their own server. */
export const sentMail: MailMessage[] = [];
const memoryMailer: Mailer = {
  send: async (m) => {
    sentMail.push(m);
  },
  close: async () => undefined,
};

/** DEPENDENCY_PATCHES=false runs pg and the validator as published (.ci/run runs a pass so). */
export const DEPENDENCY_PATCHES = process.env.DEPENDENCY_PATCHES !== 'false';

export const TEST_CONFIG: AppDeps['config'] = {
  validateResponses: true,
  dependencyPatches: DEPENDENCY_PATCHES,
  appUrl: 'http://app.test',
  // High enough that the suite never meets it; the rate-limit tests build apps with low limits.
  rateLimits: { perMinute: 1_000_000, login: 1_000_000, forgotPassword: 1_000_000, widgetSessions: 1_000_000, widgetConversations: 1_000_000, widgetMessages: 1_000_000, widgetUploads: 1_000_000 },
  trustProxy: 'loopback',
  requireHttps: false,
};

export interface Harness {
  database: Database;
  deps: AppDeps;
  app: Express;
  /** Another app on the same database and deps, with options (handler overrides, ...). */
  appWith(options: AppOptions, deps?: Partial<AppDeps>): Express;
}

let harness: Promise<Harness> | undefined;
const extraDatabases: Database[] = [];

/** PostgreSQL when DATABASE_URL is set, otherwise an in-memory PGlite; migrated once per run. */
export function getHarness(): Promise<Harness> {
  harness ??= (async () => {
    const database = await openTestDatabase(process.env.DATABASE_URL);
    const deps: AppDeps = {
      config: TEST_CONFIG,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'silent' }),
      database,
      tokens: new TokenService(TEST_JWT_SECRET),
      passwords: new PasswordHasher(Number(process.env.BCRYPT_COST ?? 4)),
      mailer: memoryMailer,
      // One cache for every app of the run, as one instance has: a logout through one app counts in all.
      sessions: new SessionCache(),
      secrets: new SecretBox(TEST_JWT_SECRET),
    };
    return {
      database,
      deps,
      app: createApp(deps),
      appWith: (options, overrides = {}) => createApp({ ...deps, ...overrides }, options),
    };
  })();
  return harness;
}

export async function openTestDatabase(databaseUrl: string | undefined): Promise<Database> {
  // PGlite on its own thread, as the service runs it (PGLITE_THREAD=false: on the event loop).
  const thread = process.env.PGLITE_THREAD !== 'false';
  const database = await openDatabase({ databaseUrl: databaseUrl ?? 'pglite://memory', dataDir: '.', poolMax: 10, patchedClient: DEPENDENCY_PATCHES, thread });
  await migrateToLatest(database.db);
  return database;
}

/** A database beside the shared one (the isolation tests run on both engines); closed after the run. */
export async function openExtraDatabase(databaseUrl: string | undefined): Promise<Database> {
  const database = await openTestDatabase(databaseUrl);
  extraDatabases.push(database);
  return database;
}

export async function closeHarness(): Promise<void> {
  for (const db of extraDatabases.splice(0)) await db.close();
  if (!harness) return;
  const h = await harness;
  harness = undefined;
  await h.deps.passwords.close();
  await h.database.close();
}
