import { bool, cleanEnv, makeValidator, num, str, url } from 'envalid';

// Every variable the service reads. Validation reports all bad variables at once, not the first.
const postgresOrPgliteUrl = makeValidator<string>((value) => {
  if (/^postgres(ql)?:\/\//.test(value) || /^pglite:\/\//.test(value)) return value;
  throw new Error('must be a postgres:// URL (or pglite://memory, pglite:///path for the embedded database)');
});

const positiveInt = (min: number, max: number) =>
  makeValidator<number>((value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
    return n;
  });

export class ConfigError extends Error {
  readonly problems: Record<string, string>;
  constructor(problems: Record<string, string>) {
    super(
      'Invalid configuration:\n' +
        Object.entries(problems)
          .map(([name, problem]) => `  ${name}: ${problem}`)
          .join('\n'),
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const e = cleanEnv(
    env,
    {
      NODE_ENV: str({ choices: ['development', 'test', 'production'], default: 'development' }),
      HOST: str({ default: '0.0.0.0', desc: 'address to listen on' }),
      PORT: positiveInt(0, 65535)({ default: 3000, desc: '0 picks any free port' }),
      DATA_DIR: str({ default: './data', desc: 'embedded database, dev secrets, mail and files' }),
      DATABASE_URL: postgresOrPgliteUrl({ default: undefined }),
      DATABASE_POOL_MAX: positiveInt(1, 1000)({ default: 10 }),
      REDIS_URL: url({ default: undefined }),
      JWT_SECRET: str({ default: '', desc: 'HS256 key for access tokens; required in production' }),
      BCRYPT_COST: positiveInt(4, 15)({ default: 12 }),
      LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
      VALIDATE_RESPONSES: bool({ default: true, desc: 'check every response against the contract' }),
      SHUTDOWN_TIMEOUT_MS: num({ default: 10_000 }),
    },
    {
      reporter: ({ errors }) => {
        const problems: Record<string, string> = {};
        for (const [name, error] of Object.entries(errors)) {
          if (error) problems[name] = error.message.replace(/^Missing environment variable "\w+"\.?\s*/, 'required');
        }
        if (Object.keys(problems).length > 0) throw new ConfigError(problems);
      },
    },
  );
  if (e.NODE_ENV === 'production' && e.JWT_SECRET.length < 32) {
    throw new ConfigError({ JWT_SECRET: 'required in production, at least 32 characters' });
  }
  return {
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    redisUrl: e.REDIS_URL,
    jwtSecret: e.JWT_SECRET || undefined,
    bcryptCost: e.BCRYPT_COST,
    logLevel: e.LOG_LEVEL,
    validateResponses: e.VALIDATE_RESPONSES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
  };
}

export type Config = ReturnType<typeof loadConfig>;
