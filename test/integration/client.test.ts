import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { ChatClient, describeEvent, type SocketEvent } from '../../clients/chat-client.ts';
import { TokenService } from '../../src/auth/tokens.ts';
import { addMember, createTenant, PASSWORD } from '../support/factories.ts';
import { TEST_JWT_SECRET } from '../support/harness.ts';
import { type RealtimeServer, startRealtime } from '../support/realtime.ts';

// The typed client of clients/ (openapi-fetch) against the service on a loopback port: the flow an
// integration runs, with its access token expired at the start so the first call must refresh.
describe('the openapi-fetch client (clients/chat-client.ts)', function () {
  this.timeout(30_000);
  let server: RealtimeServer;
  before(async () => {
    server = await startRealtime();
  });
  after(async () => {
    await server?.close();
  });

  it('logs in, refreshes once on a 401, and runs a conversation through transfer, close and reopen, with narrowed events', async () => {
    const t = await createTenant();
    const agent = await addMember(t, { role: 'agent', seat: 'full' });
    const client = new ChatClient({ baseUrl: server.wsUrl.replace(/^ws/, 'http').replace(/\/v1\/ws$/, '') });
    await client.login(t.owner.email, PASSWORD);

    // The same login's access token, issued an hour ago: expired, so the next call answers 401 ERR_TOKEN_EXPIRED.
    const claims = jwt.decode(client.tokens!.access_token) as { sub: string; tid: string; sid: string };
    const expired = new TokenService(TEST_JWT_SECRET, () => Date.now() - 3_600_000).signAccessToken({ userId: claims.sub, tenantId: claims.tid, sessionId: claims.sid });
    client.useTokens({ access_token: expired, refresh_token: client.tokens!.refresh_token });

    const events: SocketEvent[] = [];
    let reopened!: () => void;
    const sawReopen = new Promise<void>((resolve) => (reopened = resolve));
    const socket = await client.connect((event) => {
      events.push(event);
      if (event.type === 'conversation.reopened') reopened();
    });
    expect(client.refreshes).to.equal(1);
    await socket.welcomed;

    const contact = await client.api.POST('/v1/contacts', { body: { name: 'Grace', email: `grace-${Date.now()}@example.test` } });
    expect(contact.error).to.equal(undefined);
    const created = await client.api.POST('/v1/conversations', { body: { contact_id: contact.data!.id, subject: 'Order 42', message: 'Hello' } });
    expect(created.response.status).to.equal(201);
    const id = created.data!.id;
    const transferred = await client.api.POST('/v1/conversations/{id}/transfer', { params: { path: { id } }, body: { user_id: agent.userId } });
    expect(transferred.data?.conversation).to.include({ assigned_to: agent.userId });
    const closed = await client.api.POST('/v1/conversations/{id}/close', { params: { path: { id } } });
    expect(closed.data?.conversation.status).to.equal('closed');
    // A typed error: closing again is 409 with the contract's problem.
    const again = await client.api.POST('/v1/conversations/{id}/close', { params: { path: { id } } });
    expect(again.error).to.include({ code: 'ERR_CONVERSATION_CLOSED', status: 409 });
    const open = await client.api.POST('/v1/conversations/{id}/reopen', { params: { path: { id } } });
    expect(open.data?.conversation).to.include({ status: 'open', assigned_to: null });

    await sawReopen;
    socket.close();
    const mine = events.filter((e) => 'data' in e && (e.data as { conversation_id?: string }).conversation_id === id || describeEvent(e).includes(id));
    expect(mine.map((e) => e.type)).to.include.members(['conversation.created', 'conversation.transferred', 'conversation.closed', 'conversation.reopened']);
    expect(mine.map(describeEvent)).to.include(`reopened ${id}`);
    expect(client.refreshes).to.equal(1);
  });
});
