// A client process of bench:sockets: opens its share of the sockets (so that the measured server process
// holds only its own side of them, and no client shares its event loop), each welcomed before the next
// batch, from a loopback address of its own (one source address has about 28,000 ephemeral ports, short of
// 50,000). It tells its parent once every one of its sockets has a message.created frame of a content.
//
// Started by scripts/bench/sockets.ts through child_process.fork and told what to open (ClientShare) over
// its IPC channel (visitor tokens, one per socket, are too many for the environment).
import { WebSocket } from 'ws';

/** What a client process opens: `count` sockets to `url`, each with `?visitor_token=` of its own when `tokens`. */
export interface ClientShare {
  url: string;
  count: number;
  headers: Record<string, string>;
  localAddress: string;
  tokens?: string[];
}

/** What a client process tells its parent. */
export type ClientReport =
  | { opened: number; seconds: number }
  | { content: string; sockets: number; frame: string }
  | { failed: string };

const report = (message: ClientReport) => process.send!(message);

const BATCH = 200;

const sockets: WebSocket[] = [];
/** Sockets that have each content's frame, until all do. */
const heard = new Map<string, number>();
let closing = false;

const onFrame = (raw: WebSocket.RawData) => {
  const text = raw.toString();
  // A cheap test before parsing: only message.created frames matter here.
  if (!text.includes('"message.created"')) return;
  const content = (JSON.parse(text) as { data: { message: { content: string } } }).data.message.content;
  const n = (heard.get(content) ?? 0) + 1;
  if (n < share!.count) return void heard.set(content, n);
  heard.delete(content);
  report({ content, sockets: share!.count, frame: text });
};

const open = ({ url, headers, localAddress, tokens }: ClientShare, i: number) =>
  new Promise<void>((resolve, reject) => {
    const ws = new WebSocket(tokens ? `${url}?visitor_token=${tokens[i]}` : url, { headers, perMessageDeflate: false, localAddress });
    ws.once('message', (raw) => {
      if (!raw.toString().startsWith('{"type":"welcome"')) return reject(new Error(`first frame was not a welcome: ${raw.toString().slice(0, 200)}`));
      ws.on('message', onFrame);
      resolve();
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once('error', reject);
    // A socket the server lets go mid-run would leave an event waiting for it forever: the run fails instead.
    ws.once('close', (code, reason) => {
      if (!closing) report({ failed: `a socket closed: ${code} ${reason.toString()}` });
    });
    sockets.push(ws);
  });

let share: ClientShare | undefined;

async function openAll(given: ClientShare): Promise<void> {
  share = given;
  const started = performance.now();
  try {
    for (let i = 0; i < given.count; i += BATCH) await Promise.all(Array.from({ length: Math.min(BATCH, given.count - i) }, (_, j) => open(given, i + j)));
    report({ opened: given.count, seconds: (performance.now() - started) / 1000 });
  } catch (err) {
    report({ failed: String(err) });
  }
}

process.on('message', (message: { open?: ClientShare; close?: true }) => {
  if (message.open) return void openAll(message.open);
  if (!message.close) return;
  closing = true;
  for (const ws of sockets) ws.terminate();
  process.exit(0);
});
process.on('disconnect', () => process.exit(0));
