import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import request from 'supertest';
import { addMember, createConversation, createTenant, eventsOf, login, messagesOf } from '../support/factories.ts';
import { getHarness } from '../support/harness.ts';
import { expectProblem } from '../support/problem.ts';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function send(token: string, body: object, key?: string) {
  const { app } = await getHarness();
  const req = request(app).post('/api/v1/messages').set(bearer(token));
  if (key) req.set('Idempotency-Key', key);
  return req.send(body);
}

describe('messages', () => {
  it('sends a message: 201, the conversation\'s last message moves, message.created', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const res = await send(t.owner.accessToken, { conversation_id: c.id, content: 'How can I help?' });
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ conversation_id: c.id, sender_type: 'user', sender_id: t.owner.userId, type: 'text', content: 'How can I help?', internal: false });
    expect(res.body.attachments).to.deep.equal([]);
    const after = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken)).expect(200);
    expect(after.body).to.include({ last_message: 'How can I help?', last_message_at: res.body.created_at });
    const created = (await eventsOf(t, c.id)).filter((e) => e.type === 'message.created');
    expect(created).to.have.length(1);
    expect(created[0]!.data).to.deep.equal({ conversation_id: c.id, message: res.body });
  });

  it('an internal note stays internal: type note, not the last message, its event marked internal', async () => {
    const t = await createTenant();
    const c = await createConversation(t, { message: 'visible' });
    const res = await send(t.owner.accessToken, { conversation_id: c.id, content: 'psst, VIP', internal: true });
    expect(res.body).to.include({ type: 'note', internal: true });
    const { app } = await getHarness();
    const after = await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(t.owner.accessToken));
    expect(after.body.last_message).to.equal('visible');
    const noteEvent = (await eventsOf(t, c.id)).filter((e) => e.type === 'message.created').at(-1)!;
    expect(noteEvent.internal).to.equal(true);
  });

  it('a closed conversation takes no message (409); bad content is 400', async () => {
    const t = await createTenant();
    const c = await createConversation(t);
    const { app } = await getHarness();
    await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
    expectProblem(await send(t.owner.accessToken, { conversation_id: c.id, content: 'hello?' }), 409, 'ERR_CONVERSATION_CLOSED');
    const open = await createConversation(t);
    expectProblem(await send(t.owner.accessToken, { conversation_id: open.id, content: '' }), 400, 'ERR_VALIDATION');
    expectProblem(await send(t.owner.accessToken, { conversation_id: open.id, content: 'x'.repeat(10_001) }), 400, 'ERR_VALIDATION');
    expect((await send(t.owner.accessToken, { conversation_id: open.id, content: 'x'.repeat(10_000) })).status).to.equal(201);
    expectProblem(await send(t.owner.accessToken, { conversation_id: 'conv_nope', content: 'x' }), 400, 'ERR_VALIDATION');
  });

  it('lite seats read but do not send (403 ERR_LITE_SEAT)', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const lite = await addMember(t, { seat: 'lite' });
    const token = await login(lite.email);
    const c = await createConversation(t);
    expectProblem(await send(token, { conversation_id: c.id, content: 'hi' }), 403, 'ERR_LITE_SEAT');
    await request(app).get(`/api/v1/messages/${c.id}`).set(bearer(token)).expect(200);
  });

  it('an integration\'s API key sends as a bot', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const key = (await request(app).post('/api/v1/api-keys').set(bearer(t.owner.accessToken)).send({ name: 'bot', scopes: ['messages:write'] })).body;
    const res = await request(app).post('/api/v1/messages').set('X-API-Key', key.key).set('X-Tenant-ID', t.tenantId).send({ conversation_id: c.id, content: 'Automated reply' }).expect(201);
    expect(res.body).to.include({ sender_type: 'bot', sender_id: key.id });
  });

  describe('Idempotency-Key', () => {
    it('a retry with the same key and body answers the first answer and sends nothing new', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      const key = randomUUID();
      const body = { conversation_id: c.id, content: 'only once' };
      const first = await send(t.owner.accessToken, body, key);
      const retry = await send(t.owner.accessToken, body, key);
      expect(first.status).to.equal(201);
      expect(retry.status).to.equal(201);
      expect(retry.body).to.deep.equal(first.body);
      expect(retry.headers['idempotent-replayed']).to.equal('true');
      expect((await messagesOf(t, c.id)).filter((m) => m.content === 'only once')).to.have.length(1);
      expect((await eventsOf(t, c.id)).filter((e) => e.type === 'message.created')).to.have.length(1);
    });

    it('the same key with another body is 409 ERR_IDEMPOTENCY_MISMATCH', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      const key = randomUUID();
      await send(t.owner.accessToken, { conversation_id: c.id, content: 'one' }, key);
      expectProblem(await send(t.owner.accessToken, { conversation_id: c.id, content: 'two' }, key), 409, 'ERR_IDEMPOTENCY_MISMATCH');
    });

    it('concurrent requests with one key send one message', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      const key = randomUUID();
      const results = await Promise.all([1, 2, 3, 4].map(() => send(t.owner.accessToken, { conversation_id: c.id, content: 'racing' }, key)));
      expect(results.map((r) => r.status)).to.deep.equal([201, 201, 201, 201]);
      expect(new Set(results.map((r) => r.body.id)).size).to.equal(1);
      expect((await messagesOf(t, c.id)).filter((m) => m.content === 'racing')).to.have.length(1);
    });

    it('keys belong to their caller: another member\'s same key is another message', async () => {
      const t = await createTenant();
      const agent = await addMember(t);
      const c = await createConversation(t);
      const key = randomUUID();
      const a = await send(t.owner.accessToken, { conversation_id: c.id, content: 'same' }, key);
      const b = await send(await login(agent.email), { conversation_id: c.id, content: 'same' }, key);
      expect(a.body.id).not.to.equal(b.body.id);
    });

    it('a failed request does not burn its key', async () => {
      const t = await createTenant();
      const c = await createConversation(t);
      const { app } = await getHarness();
      await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(t.owner.accessToken)).expect(200);
      const key = randomUUID();
      expectProblem(await send(t.owner.accessToken, { conversation_id: c.id, content: 'late' }, key), 409, 'ERR_CONVERSATION_CLOSED');
      await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(t.owner.accessToken)).expect(200);
      expect((await send(t.owner.accessToken, { conversation_id: c.id, content: 'late' }, key)).status).to.equal(201);
    });
  });

  it('lists newest first; next_cursor goes back in time without gaps or repeats', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const c = await createConversation(t);
    const sent: string[] = [];
    for (let i = 0; i < 7; i++) sent.push((await send(t.owner.accessToken, { conversation_id: c.id, content: `m${i}` })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let first = true;
    do {
      const res: request.Response = await request(app).get(`/api/v1/messages/${c.id}?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set(bearer(t.owner.accessToken)).expect(200);
      if (first) expect(res.body.pagination).to.include({ total: 7, limit: 3, has_more: true });
      first = false;
      seen.push(...res.body.data.map((m: { id: string }) => m.id));
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(seen).to.deep.equal([...sent].reverse());
  });

  it('read marks are per reader: unread counts others\' messages since the mark; message.read', async () => {
    const { app } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    const agentToken = await login(agent.email);
    const c = await createConversation(t);
    await send(t.owner.accessToken, { conversation_id: c.id, content: 'one' });
    await send(t.owner.accessToken, { conversation_id: c.id, content: 'two' });
    const get = (token: string) => request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(token));
    expect((await get(agentToken)).body.unread_count).to.equal(2);
    expect((await get(t.owner.accessToken)).body.unread_count).to.equal(0);
    const read = await request(app).post(`/api/v1/messages/${c.id}/read`).set(bearer(agentToken)).expect(200);
    expect(read.body).to.include({ conversation_id: c.id, unread_count: 0 });
    expect((await get(agentToken)).body.unread_count).to.equal(0);
    await send(t.owner.accessToken, { conversation_id: c.id, content: 'three' });
    expect((await get(agentToken)).body.unread_count).to.equal(1);
    const readEvent = (await eventsOf(t, c.id)).find((e) => e.type === 'message.read')!;
    expect(readEvent.data).to.deep.equal({ conversation_id: c.id, reader_id: agent.userId, last_read_at: read.body.last_read_at });
  });

  it('property: unread counts kept as counters equal a recount, through any sends, notes, notices and reads', async () => {
    const { app, database } = await getHarness();
    const t = await createTenant();
    const agent = await addMember(t);
    const agentToken = await login(agent.email);
    const readers = [
      { id: t.owner.userId, token: t.owner.accessToken },
      { id: agent.userId, token: agentToken },
    ];
    // What unread meant when it was counted per row: others' messages after the reader's mark, no system notices.
    const recount = (conversationId: string, readerId: string) =>
      database.withTenant(t.tenantId, async (trx) => {
        const mark = await trx.selectFrom('read_marks').select('last_read_at').where('conversation_id', '=', conversationId).where('reader_id', '=', readerId).executeTakeFirst();
        let q = trx.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('conversation_id', '=', conversationId).where('type', '<>', 'system');
        q = q.where((eb) => eb.or([eb('sender_id', 'is', null), eb('sender_id', '<>', readerId)]));
        if (mark?.last_read_at) q = q.where('created_at', '>', mark.last_read_at);
        return Number((await q.executeTakeFirstOrThrow()).n);
      });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('send', 'note', 'read', 'close-reopen'), fc.integer({ min: 0, max: 1 })), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const c = await createConversation(t);
          for (const [step, who] of steps) {
            const reader = readers[who]!;
            if (step === 'send' || step === 'note') {
              await send(reader.token, { conversation_id: c.id, content: step, internal: step === 'note' }).then((r) => expect(r.status).to.equal(201));
            } else if (step === 'read') {
              await request(app).post(`/api/v1/messages/${c.id}/read`).set(bearer(reader.token)).expect(200);
            } else {
              await request(app).post(`/api/v1/conversations/${c.id}/close`).set(bearer(reader.token)).expect(200);
              await request(app).post(`/api/v1/conversations/${c.id}/reopen`).set(bearer(reader.token)).expect(200);
            }
          }
          for (const reader of readers) {
            const shown = (await request(app).get(`/api/v1/conversations/${c.id}`).set(bearer(reader.token)).expect(200)).body.unread_count;
            expect(shown, `unread for ${reader.id === agent.userId ? 'agent' : 'owner'} after ${steps.map((s) => s.join(':')).join(', ')}`).to.equal(await recount(c.id, reader.id));
          }
        },
      ),
      { numRuns: 25, seed: 4711 },
    );
  });
});
