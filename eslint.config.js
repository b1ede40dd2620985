// ESLint: the recommended rules of ESLint and typescript-eslint (syntax only: no type information, so
// it stays fast), and the layering rules of src/ (scripts/lint/layers.ts; docs/architecture.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { join } from 'node:path';
import { layers } from './scripts/lint/layers.ts';

const srcDir = join(import.meta.dirname, 'src');

// The folders of src/ and what each may import, lowest first: the graph has no circle (the rule checks),
// and a folder imports only from folders above it in this list. app.ts and server.ts wire everything.
// Where a lower folder needs a higher one, the higher one is passed in (an interface in the lower folder,
// the implementation given by app.ts): see docs/architecture.md.
export const features = {
  shared: [],
  db: ['shared'],
  redis: ['shared'],
  mail: [],
  delivery: [],
  jobs: ['db'],
  metrics: [],
  http: ['db', 'metrics', 'shared'],
  telemetry: ['http'],
  pages: [],
  events: ['db', 'http', 'metrics', 'redis', 'shared'],
  presence: [],
  health: ['db', 'http', 'redis', 'shared'],
  contacts: ['db', 'http', 'shared'],
  'canned-responses': ['db', 'http', 'shared'],
  departments: ['db', 'http', 'shared'],
  hours: ['db', 'http', 'shared'],
  labels: ['db', 'events', 'http', 'shared'],
  snooze: ['db', 'events', 'http', 'jobs', 'shared'],
  reports: ['db', 'hours', 'http', 'jobs', 'shared'],
  team: ['db', 'http', 'presence', 'shared'],
  visitors: ['contacts', 'db', 'http', 'shared'],
  auth: ['db', 'http', 'mail', 'redis', 'shared'],
  'api-keys': ['auth', 'db', 'http', 'shared'],
  files: ['db', 'http', 'shared'],
  billing: ['db', 'files', 'http', 'shared'],
  webhooks: ['db', 'delivery', 'events', 'http', 'mail', 'metrics', 'shared'],
  bots: ['api-keys', 'canned-responses', 'db', 'delivery', 'events', 'http', 'metrics', 'shared', 'webhooks'],
  conversations: ['auth', 'billing', 'bots', 'contacts', 'db', 'events', 'files', 'http', 'presence', 'reports', 'shared', 'snooze', 'visitors'],
  search: ['conversations', 'db', 'http', 'shared'],
  tenants: ['auth', 'billing', 'conversations', 'db', 'events', 'http', 'mail', 'shared'],
  realtime: ['auth', 'conversations', 'db', 'events', 'http', 'presence', 'redis', 'shared', 'visitors'],
  routing: ['conversations', 'db', 'events', 'http', 'jobs', 'presence', 'realtime', 'shared'],
  retention: ['db', 'files', 'jobs', 'shared'],
  widgets: ['auth', 'billing', 'bots', 'contacts', 'conversations', 'db', 'events', 'hours', 'http', 'shared', 'visitors'],
  workflows: ['contacts', 'conversations', 'db', 'delivery', 'events', 'hours', 'http', 'jobs', 'labels', 'mail', 'metrics', 'shared', 'webhooks'],
};

export default tseslint.config(
  { ignores: ['generated/', 'node_modules/', 'data/', 'coverage/', 'scratch/', 'artifacts/', 'widget/dist/', 'app/dist/', 'clients/dist/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // The database layer and test helpers use `any` where Kysely's types cannot follow (Kysely<any> in migrations).
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Configuration files that tools load with require (mocha's).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { process: 'readonly', module: 'writable' } },
  },
  {
    // chai's property assertions (`.to.be.true`, `.and.not.empty`) are expressions.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { layers },
    rules: {
      'layers/no-query-outside-repository': ['error', { srcDir }],
      'layers/features': ['error', { srcDir, features }],
      'layers/imports': [
        'error',
        {
          srcDir,
          shared: ['shared', 'db', 'events', 'delivery', 'redis'],
          // Debt, not precedent: each should go through the other feature's service. Remove, never add.
          allowedRepositoryImports: [],
        },
      ],
    },
  },
  {
    // The service's own modules (the bench and test scripts may import them as they like).
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['node:http', 'http', 'node:https', 'https'].map((name) => ({
            name,
            allowTypeImports: true,
            message:
              "take it with process.getBuiltinModule('node:http'): an ESM import of it makes Node load its bundled undici (http.WebSocket) at every start",
          })),
        },
      ],
    },
  },
);
