import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import request from 'supertest';
import { WIDGET_BUDGET_BYTES, WIDGET_BUNDLE } from '../../src/widgets/widget-script.ts';
import { getHarness } from '../support/harness.ts';

describe('GET /widget.js', () => {
  it('serves the committed bundle as a script any site may embed, revalidated by ETag', async () => {
    const { app } = await getHarness();
    const committed = await readFile(WIDGET_BUNDLE);
    const res = await request(app).get('/widget.js').buffer(true).parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/javascript; charset=utf-8');
    expect(res.headers['cross-origin-resource-policy']).to.equal('cross-origin');
    expect(res.headers['cache-control']).to.equal('public, max-age=300');
    expect((res.body as Buffer).equals(committed)).to.equal(true);
    const again = await request(app).get('/widget.js').set('If-None-Match', res.headers.etag!);
    expect(again.status).to.equal(304);
  });

  it('stays within its budget of 30 KB gzipped', async () => {
    const gzipped = gzipSync(await readFile(WIDGET_BUNDLE), { level: 9 }).length;
    expect(gzipped).to.be.greaterThan(1000).and.at.most(WIDGET_BUDGET_BYTES);
  });

});
