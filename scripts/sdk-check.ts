// `npm run sdk:check`: what a partner does with the contract. Generates a TypeScript SDK with
// @hey-api/openapi-ts into a temporary directory and compiles it, with a small client beside it that
// logs in, sends a message and narrows the events feed by `type`. Fails if either does not compile.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';

const root = new URL('../', import.meta.url);
const dir = mkdtempSync(join(tmpdir(), 'chat-sdk-'));
const keep = process.argv.includes('--keep');
try {
  await createClient({
    input: fileURLToPath(new URL('openapi/chat.yaml', root)),
    output: join(dir, 'sdk'),
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent' },
  });
  writeFileSync(
    join(dir, 'client.ts'),
    `import { client } from './sdk/client.gen.js';
import { listEvents, login, sendMessage } from './sdk/sdk.gen.js';
import type { Event } from './sdk/types.gen.js';

client.setConfig({ baseUrl: 'http://127.0.0.1:4010/api' });

export function describe(event: Event): string {
  switch (event.type) {
    case 'message.created':
      return event.data.message.content;
    case 'conversation.closed':
      // null when the close skipped the survey (a workflow's skip_survey).
      return event.data.survey_id ?? 'closed without a survey';
    default:
      return event.id;
  }
}

export async function flow(): Promise<string[]> {
  const { data: tokens } = await login({ body: { email: 'ann@example.test', password: 'secret' }, throwOnError: true });
  const headers = { Authorization: \`Bearer \${tokens.access_token}\` };
  // internal has a default: a client may leave it out.
  await sendMessage({ body: { conversation_id: 'conv_0193', content: 'Hello' }, headers, throwOnError: true });
  const { data: feed } = await listEvents({ headers, throwOnError: true });
  return feed.data.map(describe);
}
`,
  );
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom', 'dom.iterable'], noEmit: true, skipLibCheck: true },
      include: ['**/*.ts'],
    }),
  );
  const tsc = fileURLToPath(new URL('node_modules/typescript/bin/tsc', root));
  try {
    execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout: Buffer; stderr: Buffer };
    console.error(`the generated SDK (or a client of it) does not compile:\n${stdout}${stderr}`);
    process.exitCode = 1;
  }
  if (!process.exitCode) console.log('the @hey-api/openapi-ts SDK compiles, and a client of it narrows events by type');
} finally {
  if (keep) console.log(`kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
