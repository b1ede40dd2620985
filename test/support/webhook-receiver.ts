import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { eventually } from './eventually.ts';

export interface ReceivedDelivery {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The envelope, when some secret of the receiver verified the signature; undefined otherwise. */
  verified: Record<string, any> | undefined;
  /** Which of the receiver's secrets verified it. */
  verifiedBy: string[];
  /** What the receiver answered (0: it never answered). */
  answered: number;
}

export type Behaviour = 'ok' | 'hang' | number;

/**
 * A webhook receiver on loopback that verifies every request with the standardwebhooks library, as an
 * integrator's would. `behave` decides the answer per request (a status, or hang until closed).
 */
export interface Receiver {
  url: string;
  received: ReceivedDelivery[];
  secrets: string[];
  behave: (delivery: ReceivedDelivery) => Behaviour;
  /** Requests being handled now, by webhook-id: above 1 means one delivery attempted twice at once. */
  maxConcurrentPerId: number;
  /** Resolves once `predicate` holds over what was received; rejects after `ms`, naming what arrived. */
  until(predicate: (received: ReceivedDelivery[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(options: { secrets?: string[]; behave?: (d: ReceivedDelivery) => Behaviour; port?: number } = {}): Promise<Receiver> {
  const waiters = new Set<() => void>();
  const hanging = new Set<() => void>();
  const inFlight = new Map<string, number>();
  const receiver: Receiver = {
    url: '',
    received: [],
    secrets: options.secrets ?? [],
    behave: options.behave ?? (() => 'ok'),
    maxConcurrentPerId: 0,
    until: async (predicate, ms = 15_000) => {
      await eventually(() => predicate(receiver.received), () => `the receiver to get what was awaited; it got ${receiver.received.length}: ${receiver.received.slice(-10).map((d) => `${d.id}→${d.answered}`).join(', ')} (the last ten)`, {
        timeoutMs: ms,
        wake: (wakeUp) => waiters.add(wakeUp),
      });
    },
    close: async () => {
      for (const release of hanging) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const concurrent = (inFlight.get(id) ?? 0) + 1;
      inFlight.set(id, concurrent);
      receiver.maxConcurrentPerId = Math.max(receiver.maxConcurrentPerId, concurrent);
      const delivery: ReceivedDelivery = { id, headers: req.headers, body, verified: undefined, verifiedBy: [], answered: 0 };
      for (const secret of receiver.secrets) {
        try {
          delivery.verified = new Webhook(secret).verify(body, req.headers as Record<string, string>) as Record<string, any>;
          delivery.verifiedBy.push(secret);
        } catch {
          // Not this secret.
        }
      }
      const behaviour = receiver.behave(delivery);
      const finish = (status: number) => {
        inFlight.set(id, (inFlight.get(id) ?? 1) - 1);
        delivery.answered = status;
        receiver.received.push(delivery);
        for (const wake of waiters) wake();
        waiters.clear();
        if (status > 0) res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
      };
      if (behaviour === 'hang') {
        // Recorded when the sender gives up (its timeout closes the connection).
        const release = () => {
          hanging.delete(release);
          finish(0);
        };
        hanging.add(release);
        res.on('close', release);
        return;
      }
      finish(behaviour === 'ok' ? 200 : behaviour);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
