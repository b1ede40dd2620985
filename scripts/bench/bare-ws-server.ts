// The fan-out benchmark's baseline: a bare `ws` server (no auth, no database, no event feed) that sends
// each frame POSTed to /broadcast to every open socket, as the service sends one event's frame.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const server = createServer((req, res) => {
  if (req.url === '/api/health') return void res.writeHead(200).end('{}');
  if (req.method !== 'POST' || req.url !== '/broadcast') return void res.writeHead(404).end();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const frame = Buffer.concat(chunks).toString('utf8');
    for (const ws of wss.clients) ws.send(frame);
    res.writeHead(202).end();
  });
});
// As the service's: no compression (DESIGN section 6).
const wss = new WebSocketServer({ server, perMessageDeflate: false });
wss.on('connection', (ws) => ws.send('{"type":"welcome"}'));
server.listen(Number(process.env.PORT), '127.0.0.1');
