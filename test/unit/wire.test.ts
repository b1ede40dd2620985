import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import fc from 'fast-check';
import * as wsModule from 'ws';
import { WebSocket, WebSocketServer } from 'ws';
import { outgoingFrame, writeFrame } from '../../src/realtime/wire.ts';

type SenderClass = new (socket: unknown) => { send(data: Buffer, options: object, cb?: () => void): void };
const { Sender } = wsModule as unknown as { Sender: SenderClass };

/** The bytes ws itself writes for a text frame of this payload, from a server's sender. */
function framedByWs(payload: Buffer): Buffer {
  const written: Buffer[] = [];
  const socket = { cork() {}, uncork() {}, write: (chunk: Buffer) => (written.push(Buffer.from(chunk)), true) };
  new Sender(socket).send(payload, { binary: false, fin: true, mask: false, compress: false });
  return Buffer.concat(written);
}

/** A server and one client; the server's socket for it and every text message the client receives. */
async function pair(options: { perMessageDeflate: boolean | object }) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', ...options });
  await once(server, 'listening');
  const accepted = once(server, 'connection');
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`, { perMessageDeflate: options.perMessageDeflate !== false });
  const received: string[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  client.on('message', (data, isBinary) => {
    expect(isBinary, 'a text frame').to.equal(false);
    received.push(data.toString('utf8'));
    for (const w of waiters) if (received.length >= w.count) w.resolve();
  });
  await once(client, 'open');
  const [socket] = (await accepted) as [WebSocket];
  return {
    socket,
    received,
    until: (count: number) => new Promise<void>((resolve) => (received.length >= count ? resolve() : waiters.push({ count, resolve }))),
    close: async () => {
      client.terminate();
      server.close();
    },
  };
}

describe('frames built once for many sockets', () => {
  it('are the bytes ws writes for the same text, at every length class of the header', () => {
    const lengths = fc.oneof(fc.constantFrom(0, 1, 125, 126, 127, 65_535, 65_536, 70_000), fc.nat(300));
    fc.assert(
      fc.property(lengths, fc.nat(255), (length, fill) => {
        const payload = Buffer.alloc(length, fill);
        expect(outgoingFrame(payload).wire.equals(framedByWs(payload))).to.equal(true);
      }),
      { numRuns: 200 },
    );
  });

  it('reach a client as the text they carry, in order with what ws frames itself', async () => {
    const p = await pair({ perMessageDeflate: false });
    try {
      const texts = ['', 'é'.repeat(63), 'a'.repeat(126), JSON.stringify({ big: 'x'.repeat(70_000) })];
      for (const text of texts) {
        writeFrame(p.socket, outgoingFrame(Buffer.from(text, 'utf8')));
        p.socket.send(`after ${text.length}`);
      }
      await p.until(texts.length * 2);
      expect(p.received).to.deep.equal(texts.flatMap((t) => [t, `after ${t.length}`]));
    } finally {
      await p.close();
    }
  });

  it('are written as built, not framed again by ws (a ws whose internals moved fails here, not silently)', async () => {
    const p = await pair({ perMessageDeflate: false });
    try {
      const sender = (p.socket as unknown as { _sender: { sendFrame: (list: Buffer[]) => void } })._sender;
      const written: Buffer[][] = [];
      const sendFrame = sender.sendFrame;
      sender.sendFrame = function (this: unknown, list: Buffer[]) {
        written.push(list);
        return sendFrame.call(this, list);
      };
      const frame = outgoingFrame(Buffer.from('{"type":"x"}', 'utf8'));
      writeFrame(p.socket, frame);
      await p.until(1);
      expect(written).to.have.length(1);
      expect(written[0]).to.have.length(1);
      expect(written[0]![0]).to.equal(frame.wire);
    } finally {
      await p.close();
    }
  });

  it('wait behind a message the socket is still compressing', async () => {
    // A socket that compresses (not this service's, but ws allows it) holds later frames while it deflates:
    // a frame written past that queue would overtake the message sent before it.
    const p = await pair({ perMessageDeflate: { threshold: 0 } });
    try {
      p.socket.send('z'.repeat(200_000));
      writeFrame(p.socket, outgoingFrame(Buffer.from('second', 'utf8')));
      await p.until(2);
      expect(p.received.map((m) => m.slice(0, 6))).to.deep.equal(['zzzzzz', 'second']);
    } finally {
      await p.close();
    }
  });
});
