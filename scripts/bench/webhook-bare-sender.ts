// The bare loop of bench:webhooks, in a process of its own as the service is: it signs each body with
// standardwebhooks and posts it to the receiver, keep-alive, CONCURRENCY at a time, nothing else. It reads
// {url, secret, concurrency, bodies} from the JSON file named by BARE_INPUT and makes two warm-up passes, then
// prints `ready`; each line `pass <round>` on its stdin makes a timed pass over the bodies and prints its
// requests/s and CPU per request as a line of JSON. The benchmark runs each pass beside a drain of the
// service's, so both meet the machine in the same state.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { Webhook } from 'standardwebhooks';
import { Agent as UndiciAgent } from 'undici';

const input = JSON.parse(readFileSync(process.env.BARE_INPUT!, 'utf8')) as { url: string; secret: string; concurrency: number; bodies: { id: string; body: string }[] };
const signer = new Webhook(input.secret);
const agent = new Agent({ keepAlive: true, maxSockets: input.concurrency });

// BENCH_BARE_CLIENT=undici posts with undici's dispatcher, as the service does, instead of node:http.
const undici = process.env.BENCH_BARE_CLIENT === 'undici' ? new UndiciAgent({ connections: input.concurrency }) : undefined;
const { origin, pathname } = new URL(input.url);

/** The Standard Webhooks headers of one post, signed now. */
const headersOf = (id: string, body: string) => {
  const at = new Date();
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signer.sign(id, at, body),
  };
};

const postWithUndici = (id: string, body: string) =>
  new Promise<void>((resolve, reject) => {
    undici!.dispatch(
      { origin, path: pathname, method: 'POST', headers: headersOf(id, body), body },
      {
        onRequestStart: () => undefined,
        onResponseStart: () => undefined,
        onResponseData: () => undefined,
        onResponseEnd: () => resolve(),
        onResponseError: (_c, err) => reject(err),
      },
    );
  });

const postWithHttp = (id: string, body: string) =>
  new Promise<void>((resolve, reject) => {
    const req = request(input.url, {
      method: 'POST',
      agent,
      headers: { ...headersOf(id, body), 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end(body);
  });

const post = undici ? postWithUndici : postWithHttp;

async function pass(count: number, round: string) {
  const cpu = process.cpuUsage();
  const began = performance.now();
  let k = 0;
  await Promise.all(
    Array.from({ length: input.concurrency }, async () => {
      while (k < count) {
        const { id, body } = input.bodies[k++]!;
        await post(`bare-${round}-${id}`, body);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  return { per_s: count / seconds, cpu_us_per_request: (used.user + used.system) / count };
}

// Two whole passes: after one of 500 requests, its timed passes still sped up from one to the next (5,400,
// 9,700, 11,400/s in one run) while the service's drains between them did not, and each pair's ratio fell.
for (const round of ['warm1', 'warm2']) await pass(input.bodies.length, round);
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const round = /^pass (\w+)$/.exec(line)?.[1];
  if (round) process.stdout.write(`${JSON.stringify(await pass(input.bodies.length, round))}\n`);
}
agent.destroy();
void undici?.destroy();
