import { expect } from 'chai';
import request from 'supertest';
import { addMember, createTenant, login } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WEEKDAY = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const hhmm = (d: Date) => d.toISOString().slice(11, 16);

const berlin = {
  time_zone: 'Europe/Berlin',
  weekly: { mon: [['09:00', '12:30'], ['13:30', '18:00']], fri: [['22:00', '02:00']] },
  overrides: [{ date: '2026-12-24', closed: true }, { date: '2026-12-31', periods: [['10:00', '14:00']] }],
};

describe('business hours (API)', () => {
  it('the tenant starts without hours (always open); an owner sets, reads and clears them', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    await request(app).get('/api/v1/business-hours').set(auth).expect(200, { hours: null, inherited: false });
    await request(app).get('/api/v1/business-hours/status').set(auth).expect(200, { open: true, next_change_at: null, time_zone: null });
    const put = await request(app).put('/api/v1/business-hours').set(auth).send({ hours: berlin }).expect(200);
    expect(put.body).to.deep.equal({ hours: berlin, inherited: false });
    expect((await request(app).get('/api/v1/business-hours').set(auth).expect(200)).body).to.deep.equal({ hours: berlin, inherited: false });
    const withoutOverrides = { time_zone: 'UTC', weekly: {} };
    expect((await request(app).put('/api/v1/business-hours').set(auth).send({ hours: withoutOverrides }).expect(200)).body.hours).to.deep.equal({ ...withoutOverrides, overrides: [] });
    await request(app).put('/api/v1/business-hours').set(auth).send({ hours: null }).expect(200, { hours: null, inherited: false });
  });

  it('status: closed until the next period starts; a closed override of today ends at the next midnight', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    // A period of an hour starting two hours from now (on the minute), on today's UTC weekday; one that
    // starts late in the evening runs past midnight, which the hours allow.
    const start = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 2 * 3_600_000);
    const end = new Date(start.getTime() + 3_600_000);
    const day = WEEKDAY[start.getUTCDay()]!;
    await request(app).put('/api/v1/business-hours').set(auth).send({ hours: { time_zone: 'UTC', weekly: { [day]: [[hhmm(start), hhmm(end)]] } } }).expect(200);
    const closed = await request(app).get('/api/v1/business-hours/status').set(auth).expect(200);
    expect(closed.body).to.deep.equal({ open: false, next_change_at: start.toISOString(), time_zone: 'UTC' });

    const now = new Date();
    const everyDay = Object.fromEntries(WEEKDAY.map((d) => [d, [['00:00', '24:00']]]));
    // Open all week except a closed override for today: the next change is tomorrow's midnight.
    const today = now.toISOString().slice(0, 10);
    await request(app).put('/api/v1/business-hours').set(auth).send({ hours: { time_zone: 'UTC', weekly: everyDay, overrides: [{ date: today, closed: true }] } }).expect(200);
    const tomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    // Yesterday's 00:00-24:00 ends at today's midnight, the override closes today.
    expect((await request(app).get('/api/v1/business-hours/status').set(auth).expect(200)).body).to.deep.equal({ open: false, next_change_at: tomorrow.toISOString(), time_zone: 'UTC' });
  });

  it('a department without hours uses the tenant\'s (inherited); with its own, its status follows them; null goes back', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: 'Night shift' }).expect(201)).body;
    await request(app).put('/api/v1/business-hours').set(auth).send({ hours: { time_zone: 'UTC', weekly: {} } }).expect(200);
    const inherited = await request(app).get(`/api/v1/departments/${dept.id}/business-hours`).set(auth).expect(200);
    expect(inherited.body).to.deep.equal({ hours: { time_zone: 'UTC', weekly: {}, overrides: [] }, inherited: true });
    expect((await request(app).get(`/api/v1/business-hours/status?department_id=${dept.id}`).set(auth).expect(200)).body.open).to.equal(false);

    const allDay = { time_zone: 'Asia/Tokyo', weekly: Object.fromEntries(WEEKDAY.map((d) => [d, [['00:00', '24:00']]])), overrides: [] };
    const own = await request(app).put(`/api/v1/departments/${dept.id}/business-hours`).set(auth).send({ hours: allDay }).expect(200);
    expect(own.body).to.deep.equal({ hours: allDay, inherited: false });
    expect((await request(app).get(`/api/v1/business-hours/status?department_id=${dept.id}`).set(auth).expect(200)).body).to.deep.equal({ open: true, next_change_at: null, time_zone: 'Asia/Tokyo' });
    // The tenant's own status is untouched by the department's.
    expect((await request(app).get('/api/v1/business-hours/status').set(auth).expect(200)).body.open).to.equal(false);
    const back = await request(app).put(`/api/v1/departments/${dept.id}/business-hours`).set(auth).send({ hours: null }).expect(200);
    expect(back.body.inherited).to.equal(true);
  });

  it('400 names the field: an unknown zone, an offset, 24:30, overlapping periods, a date that does not exist, closed with periods', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const auth = bearer(t.owner.accessToken);
    const refused = async (hours: unknown, path: string) => {
      const body = expectProblem(await request(app).put('/api/v1/business-hours').set(auth).send({ hours }), 400, 'ERR_VALIDATION');
      expect(body.errors.map((e: { path: string }) => e.path), JSON.stringify(body.errors)).to.include(path);
    };
    await refused({ time_zone: 'Europe/Atlantis', weekly: {} }, '/body/hours/time_zone');
    await refused({ time_zone: '+02:00', weekly: {} }, '/body/hours/time_zone');
    await refused({ time_zone: 'UTC', weekly: { mon: [['24:30', '10:00']] } }, '/body/hours/weekly/mon/0/0');
    await refused({ time_zone: 'UTC', weekly: { mon: [['09:00', '12:00'], ['11:30', '14:00']] } }, '/body/hours/weekly/mon/1');
    await refused({ time_zone: 'UTC', weekly: { tue: [['22:00', '10:00'], ['08:00', '09:00']] } }, '/body/hours/weekly/tue/0');
    await refused({ time_zone: 'UTC', weekly: { wed: [['10:00', '10:00']] } }, '/body/hours/weekly/wed/0');
    await refused({ time_zone: 'UTC', weekly: {}, overrides: [{ date: '2027-02-29', closed: true }] }, '/body/hours/overrides/0/date');
    await refused({ time_zone: 'UTC', weekly: {}, overrides: [{ date: '2027-01-01', closed: true, periods: [] }] }, '/body/hours/overrides/0');
    await refused({ time_zone: 'UTC', weekly: { someday: [] } }, '/body/hours/weekly/someday');
    // Nothing refused was stored.
    await request(app).get('/api/v1/business-hours').set(auth).expect(200, { hours: null, inherited: false });
    const dept = (await request(app).post('/api/v1/departments').set(auth).send({ name: 'Sales' }).expect(201)).body;
    const body = expectProblem(await request(app).put(`/api/v1/departments/${dept.id}/business-hours`).set(auth).send({ hours: { time_zone: 'Nowhere/City', weekly: {} } }), 400, 'ERR_VALIDATION');
    expect(body.errors[0].path).to.equal('/body/hours/time_zone');
    expectProblem(await request(app).get('/api/v1/business-hours/status?department_id=not-a-uuid').set(auth), 400, 'ERR_VALIDATION');
  });

  it('401 without a credential; 403 for an agent changing them (reading is fine); 404 for an unknown or another tenant\'s department; 415 for a body not JSON', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const other = await createTenant();
    expectProblem(await request(app).get('/api/v1/business-hours'), 401, 'ERR_UNAUTHENTICATED');
    expectProblem(await request(app).get('/api/v1/business-hours/status'), 401, 'ERR_UNAUTHENTICATED');
    const agent = await addMember(t, { role: 'agent' });
    const agentAuth = bearer(await login(agent.email, t.tenantId));
    await request(app).get('/api/v1/business-hours').set(agentAuth).expect(200);
    expectProblem(await request(app).put('/api/v1/business-hours').set(agentAuth).send({ hours: null }), 403, 'ERR_FORBIDDEN');
    const theirs = (await request(app).post('/api/v1/departments').set(bearer(other.owner.accessToken)).send({ name: 'Theirs' }).expect(201)).body;
    const auth = bearer(t.owner.accessToken);
    expectProblem(await request(app).put(`/api/v1/departments/${theirs.id}/business-hours`).set(agentAuth).send({ hours: null }), 403, 'ERR_FORBIDDEN');
    for (const id of [theirs.id, '01935d6e-7a3c-7c2e-9f10-2b6d0c1e4a60']) {
      expectProblem(await request(app).get(`/api/v1/departments/${id}/business-hours`).set(auth), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).put(`/api/v1/departments/${id}/business-hours`).set(auth).send({ hours: null }), 404, 'ERR_NOT_FOUND');
      expectProblem(await request(app).get(`/api/v1/business-hours/status?department_id=${id}`).set(auth), 404, 'ERR_NOT_FOUND');
    }
    expectProblem(await request(app).put('/api/v1/business-hours').set(auth).set('Content-Type', 'text/plain').send('hours'), 415, 'ERR_UNSUPPORTED_MEDIA_TYPE');
  });
});
