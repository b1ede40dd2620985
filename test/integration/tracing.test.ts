import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import request from 'supertest';
import { WebSocket } from 'ws';
import { TEST_JWT_SECRET } from '../support/harness.ts';
import { PASSWORD, uniqueEmail } from '../support/factories.ts';

interface Span {
  name: string;
  kind: number;
  traceId: string;
  parentSpanId?: string;
  spanId: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP (JSON) receiver on loopback that keeps every span posted to /v1/traces. */
async function otlpReceiver(): Promise<{ server: Server; url: string; spans: Span[] }> {
  const spans: Span[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.method === 'POST') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans };
}

const attr = (span: Span, key: string) => Object.values(span.attributes.find((a) => a.key === key)?.value ?? {})[0];

describe('tracing (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  // The service as npm start and the image run it, and started directly with the preload, each in a process of its own.
  for (const [how, args] of [
    ['node src/main.js', ['src/main.js']],
    ['node --import preload.ts src/server.ts', ['--import', './src/telemetry/preload.ts', 'src/server.ts']],
  ] as const) {
    it(`exports HTTP spans named by operation, database spans under them, and WebSocket upgrade spans (${how})`, async function () {
      this.timeout(60_000);
      const receiver = await otlpReceiver();
      const dir = await mkdtemp(join(tmpdir(), 'chat-otel-'));
      const child = spawn(process.execPath, args, {
        env: {
          PATH: process.env.PATH,
          HOST: '127.0.0.1',
          PORT: '0',
          DATA_DIR: dir,
          DATABASE_URL: process.env.DATABASE_URL ?? 'pglite://memory',
          JWT_SECRET: TEST_JWT_SECRET,
          BCRYPT_COST: '4',
          LOG_LEVEL: 'info',
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        let url: string | undefined;
        for await (const line of createInterface({ input: child.stdout! })) {
          const record = JSON.parse(line) as { msg?: string; url?: string };
          if (record.msg === 'listening') {
            url = record.url;
            break;
          }
        }
        expect(url, 'the service said where it listens').to.be.a('string');
        child.stdout!.resume();
        await request(url!).get('/api/health').expect(200);
        await request(url!).post('/api/v1/auth/register').send({ email: uniqueEmail('otel'), password: PASSWORD, name: 'O', tenant_name: 'Otel' }).expect(201);
        await request(url!).get('/api/no/such/route/4711').expect(404);
        const refused = await new Promise<number>((resolve, reject) => {
          const ws = new WebSocket(url!.replace(/^http/, 'ws') + '/api/v1/ws');
          ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
          ws.once('open', () => reject(new Error('opened without credentials')));
          ws.once('error', () => undefined);
        });
        expect(refused).to.equal(401);
        // Stopping flushes what is buffered: the sentinel is the process's exit, not a pause.
        child.kill('SIGTERM');
        const [code] = (await once(child, 'exit')) as [number];
        expect(code).to.equal(0);

        const names = receiver.spans.map((s) => s.name);
        const health = receiver.spans.find((s) => s.name === 'GET getHealth');
        expect(health, `spans: ${names.join(', ')}`).to.exist;
        expect(attr(health!, 'chat.operation')).to.equal('getHealth');
        const register = receiver.spans.find((s) => s.name === 'POST register')!;
        expect(register, `spans: ${names.join(', ')}`).to.exist;
        expect(names).to.include('GET unmatched');
        expect(names.join(' ')).not.to.contain('4711');
        const upgrade = receiver.spans.find((s) => s.name === 'WS upgrade');
        expect(upgrade, `spans: ${names.join(', ')}`).to.exist;
        expect(Number(attr(upgrade!, 'http.response.status_code'))).to.equal(401);
        if (process.env.DATABASE_URL) {
          // pg spans, children of the request that ran them.
          const queries = receiver.spans.filter((s) => s.traceId === register.traceId && s.spanId !== register.spanId);
          expect(queries.length, `spans of the register trace: ${queries.map((s) => s.name).join(', ')}`).to.be.at.least(1);
        }
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        receiver.server.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
