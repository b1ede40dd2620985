import { expect } from 'chai';
import request from 'supertest';
import { normaliseDomain, originAllowed } from '../../src/widgets/domain.ts';
import { addMember, createTenant, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('widgets and domains', () => {
  it('create shows the identity secret once; get, list, update (settings merge), delete', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const created = await request(app).post('/api/v1/widgets').set(auth).send({ name: 'Site', settings: { color: '#112233', greeting: 'Hello' } }).expect(201);
    expect(created.body.identity_secret).to.match(/^[0-9a-f]{64}$/);
    expect(created.body).to.deep.include({ name: 'Site', identity_verification: { required: false } });
    const got = await request(app).get(`/api/v1/widgets/${created.body.id}`).set(auth).expect(200);
    expect(got.body).not.to.have.property('identity_secret');
    const list = await request(app).get('/api/v1/widgets').set(auth).expect(200);
    expect(JSON.stringify(list.body)).not.to.contain(created.body.identity_secret);
    const updated = await request(app).patch(`/api/v1/widgets/${created.body.id}`).set(auth).send({ settings: { greeting: null, position: 'bottom-left' }, identity_required: true }).expect(200);
    expect(updated.body.settings).to.deep.equal({ color: '#112233', position: 'bottom-left' });
    expect(updated.body.identity_verification).to.deep.equal({ required: true });
    const rotated = await request(app).post(`/api/v1/widgets/${created.body.id}/identity-secret`).set(auth).expect(200);
    expect(rotated.body.identity_secret).not.to.equal(created.body.identity_secret);
    await request(app).delete(`/api/v1/widgets/${created.body.id}`).set(auth).expect(200, { id: created.body.id, deleted: true });
    expectProblem(await request(app).get(`/api/v1/widgets/${created.body.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('bad settings are refused; agents cannot manage widgets', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    expectProblem(await request(app).post('/api/v1/widgets').set(bearer(t.owner.accessToken)).send({ name: 'x', settings: { color: 'red' } }), 400, 'ERR_VALIDATION');
    expectProblem(await request(app).post('/api/v1/widgets').set(bearer(t.owner.accessToken)).send({ name: 'x', settings: { font: 'Comic Sans' } }), 400, 'ERR_VALIDATION');
    const agent = await addMember(t);
    expectProblem(await request(app).post('/api/v1/widgets').set(bearer(await login(agent.email))).send({ name: 'x' }), 403, 'ERR_FORBIDDEN');
  });

  it('domains: lower-cased, international names in ASCII, wildcards; scheme, port, path refused; duplicates 409', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const widget = (await request(app).post('/api/v1/widgets').set(auth).send({ name: 'W' }).expect(201)).body;
    const add = (domain: string) => request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain });
    expect((await add('Shop.Example.COM').expect(201)).body.domain).to.equal('shop.example.com');
    expect((await add('bücher.example').expect(201)).body.domain).to.equal('xn--bcher-kva.example');
    expect((await add('*.example.org').expect(201)).body.domain).to.equal('*.example.org');
    for (const bad of ['https://example.com', 'example.com:8080', 'example.com/path', 'exa mple.com', 'a.*.example.com', 'user@example.com', '-bad-.com', 'example.com?x=1']) {
      const res = await add(bad);
      expect(expectProblem(res, 400, 'ERR_VALIDATION').errors[0].path, bad).to.equal('/body/domain');
    }
    expectProblem(await add('SHOP.example.com'), 409, 'ERR_CONFLICT');
    const list = await request(app).get(`/api/v1/domains?widget_id=${widget.id}`).set(auth).expect(200);
    expect(list.body.data.map((d: { domain: string }) => d.domain)).to.deep.equal(['*.example.org', 'shop.example.com', 'xn--bcher-kva.example']);
    expectProblem(await request(app).get('/api/v1/domains').set(auth), 400, 'ERR_VALIDATION');
    const first = list.body.data[0];
    await request(app).delete(`/api/v1/domains/${first.id}`).set(auth).expect(200, { id: first.id, deleted: true });
    expectProblem(await request(app).delete(`/api/v1/domains/${first.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('another tenant\'s widgets and domains are not found', async () => {
    const { app } = await getHarness();
    const a = await createTenant();
    const b = await createTenant();
    const widget = (await request(app).post('/api/v1/widgets').set(bearer(b.owner.accessToken)).send({ name: 'B' })).body;
    const domain = (await request(app).post('/api/v1/domains').set(bearer(b.owner.accessToken)).send({ widget_id: widget.id, domain: 'b.example' })).body;
    const auth = bearer(a.owner.accessToken);
    expectProblem(await request(app).get(`/api/v1/widgets/${widget.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).patch(`/api/v1/widgets/${widget.id}`).set(auth).send({ name: 'mine' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).get(`/api/v1/domains?widget_id=${widget.id}`).set(auth), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).post('/api/v1/domains').set(auth).send({ widget_id: widget.id, domain: 'evil.example' }), 404, 'ERR_NOT_FOUND');
    expectProblem(await request(app).delete(`/api/v1/domains/${domain.id}`).set(auth), 404, 'ERR_NOT_FOUND');
  });

  it('an origin matches by host name, whatever its port; a wildcard covers subdomains, not the domain itself', () => {
    const domains = ['shop.example.com', '*.example.org'];
    expect(originAllowed('https://shop.example.com', domains)).to.equal(true);
    expect(originAllowed('http://shop.example.com:8080', domains)).to.equal(true);
    expect(originAllowed('https://a.b.example.org', domains)).to.equal(true);
    expect(originAllowed('https://example.org', domains)).to.equal(false);
    expect(originAllowed('https://evilexample.org', domains)).to.equal(false);
    expect(originAllowed('https://shop.example.com.evil.net', domains)).to.equal(false);
    expect(originAllowed('null', domains)).to.equal(false);
    expect(originAllowed(undefined, domains)).to.equal(false);
    expect(normaliseDomain(' Example.COM. ')).to.equal('example.com');
  });
});
