import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import fc from 'fast-check';
import { HASH_BATCH_BYTES, OffThreadHash, hashThreadForTests } from '../../src/files/offthread-hash.ts';
import { MeteredStream } from '../../src/files/upload-stream.ts';

const sha256 = (chunks: Uint8Array[]) => {
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c);
  return hash.digest();
};

/** Feeds the chunks as a stream does: waiting whenever update asks to. */
async function offThread(chunks: Uint8Array[]): Promise<Buffer> {
  const hash = new OffThreadHash();
  for (const chunk of chunks) await hash.update(chunk);
  return hash.digest();
}

describe('SHA-256 on the hashing thread', () => {
  it('gives the digest node:crypto gives, however the bytes are cut (empty chunks, batch edges, several batches)', async () => {
    const sizes = fc.oneof(fc.constantFrom(0, 1, HASH_BATCH_BYTES - 1, HASH_BATCH_BYTES, HASH_BATCH_BYTES + 1), fc.integer({ min: 0, max: 3 * HASH_BATCH_BYTES }));
    await fc.assert(
      fc.asyncProperty(fc.array(sizes, { maxLength: 12 }), async (lengths) => {
        const chunks = lengths.map((n) => randomBytes(n));
        expect((await offThread(chunks)).equals(sha256(chunks))).to.equal(true);
      }),
      { numRuns: 60 },
    );
    expect(hashThreadForTests().sessions()).to.equal(0);
  });

  it('keeps sessions apart when many uploads interleave', async () => {
    const uploads = Array.from({ length: 20 }, (_, i) => Array.from({ length: 1 + (i % 5) }, () => randomBytes(HASH_BATCH_BYTES / 2 + i * 997)));
    const sessions = uploads.map(() => new OffThreadHash());
    // Round-robin, one chunk of each upload in turn.
    for (let round = 0; round < 5; round++) {
      await Promise.all(sessions.map((s, i) => (uploads[i]![round] ? s.update(uploads[i]![round]!) : undefined)));
    }
    const digests = await Promise.all(sessions.map((s) => s.digest()));
    digests.forEach((d, i) => expect(d.equals(sha256(uploads[i]!)), `upload ${i}`).to.equal(true));
  });

  it('asks the caller to wait while two or more batches of its session are still being hashed', async () => {
    const hash = new OffThreadHash();
    // Two whole batches go out at once and nothing has come back: the caller must wait.
    const wait = hash.update(randomBytes(2 * HASH_BATCH_BYTES));
    expect(wait).to.be.instanceOf(Promise);
    await wait;
    // Acknowledged: a small chunk that fills no batch goes on at once.
    expect(hash.update(randomBytes(10))).to.equal(undefined);
    // A chunk of five batches: the wait lasts until fewer than two are left, not until the first comes back.
    await hash.update(randomBytes(5 * HASH_BATCH_BYTES));
    expect(hash.update(randomBytes(10))).to.equal(undefined);
    await hash.digest();
  });

  it('forgets an aborted session on both sides', async () => {
    const before = hashThreadForTests().sessions();
    const hash = new OffThreadHash();
    await hash.update(randomBytes(HASH_BATCH_BYTES + 5));
    expect(hashThreadForTests().sessions()).to.equal(before + 1);
    hash.abort();
    expect(hashThreadForTests().sessions()).to.equal(before);
    // The thread still serves others.
    const chunks = [randomBytes(1000)];
    expect((await offThread(chunks)).equals(sha256(chunks))).to.equal(true);
  });

  it('fails the sessions of a thread that stops, and starts a new one for the next', async () => {
    const hash = new OffThreadHash();
    await hash.update(randomBytes(100));
    await hashThreadForTests().terminate();
    let failed: unknown;
    await hash.digest().catch((err: unknown) => (failed = err));
    expect(failed).to.be.instanceOf(Error);
    expect((failed as Error).message).to.match(/hashing thread stopped/);
    const chunks = [randomBytes(HASH_BATCH_BYTES * 2 + 3)];
    expect((await offThread(chunks)).equals(sha256(chunks))).to.equal(true);
  });

  it('a metered upload stream fails, instead of hanging, when the thread stops under it', async () => {
    const metered = new MeteredStream(10 * HASH_BATCH_BYTES);
    const source = Readable.from(
      (async function* () {
        yield randomBytes(HASH_BATCH_BYTES);
        await hashThreadForTests().terminate();
        yield randomBytes(HASH_BATCH_BYTES * 3);
      })(),
    );
    let failed: unknown;
    await pipeline(source, metered, new Writable({ write: (_c, _e, cb) => cb() })).catch((err: unknown) => (failed = err));
    expect(failed).to.be.instanceOf(Error);
    expect((failed as Error).message).to.match(/hashing thread stopped/);
  });
});
