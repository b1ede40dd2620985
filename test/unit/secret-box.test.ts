import { expect } from 'chai';
import { SealedSecretError, SecretBox } from '../../src/shared/secret-box.ts';

describe('the secret box (sealed secrets at rest)', () => {
  const box = new SecretBox('a key long enough for anyone 0123456789');

  it('seals to a versioned value that opens to the same text, a fresh IV each time', () => {
    const a = box.seal('sk-live-1234 ünïcode');
    const b = box.seal('sk-live-1234 ünïcode');
    expect(a).to.match(/^sealed:v1:[A-Za-z0-9_-]+$/);
    expect(a).to.not.equal(b);
    expect(a).to.not.include('sk-live');
    expect(box.open(a)).to.equal('sk-live-1234 ünïcode');
    expect(box.open(box.seal(''))).to.equal('');
  });

  it('a value stored before sealing opens as itself', () => {
    expect(box.open('sk-plain')).to.equal('sk-plain');
    expect(SecretBox.isSealed('sk-plain')).to.equal(false);
  });

  it('refuses a value sealed under another key, altered, or cut short, with SealedSecretError', () => {
    const sealed = box.seal('sk-live');
    expect(() => new SecretBox('another key entirely, also long 0123456789').open(sealed)).to.throw(SealedSecretError);
    const raw = Buffer.from(sealed.slice('sealed:v1:'.length), 'base64url');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`sealed:v1:${raw.toString('base64url')}`)).to.throw(SealedSecretError);
    expect(() => box.open('sealed:v1:AAAA')).to.throw(SealedSecretError, /cut short/);
  });
});
