// The floor under any upload service on this machine: a bare node:http server that writes each request's
// body to a file of its own, nothing else (no multipart parsing, no hashing, no database). bench:files runs
// it beside the service so that what HTTP alone costs here is measured, not assumed.
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const dir = process.env.SINK_DIR!;
mkdirSync(dir, { recursive: true });
let n = 0;
createServer((req, res) => {
  if (req.url === '/api/health') return void res.writeHead(200).end('{}');
  let size = 0;
  req.on('data', (chunk: Buffer) => (size += chunk.length));
  pipeline(req, createWriteStream(join(dir, String(n++)), { highWaterMark: 256 * 1024 })).then(
    () => res.writeHead(201, { 'Content-Type': 'application/json' }).end(JSON.stringify({ size })),
    () => res.writeHead(500).end('{}'),
  );
}).listen(Number(process.env.PORT), process.env.HOST);
