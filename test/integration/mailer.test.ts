import { expect } from 'chai';
import { createServer, type Socket } from 'node:net';
import pino from 'pino';
import { createMailer } from '../../src/mail/mailer.ts';
import { startSmtpServer } from '../support/smtp.ts';

const logger = pino({ level: 'silent' });
const message = { to: 'someone@example.test', subject: 'Hello', text: 'Hello' };

describe('mail over SMTP', () => {
  it('a server that accepts the connection and never greets fails the send within the timeout, not minutes later', async function () {
    this.timeout(10_000);
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const mailer = createMailer({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'Chat <no-reply@chat.test>', dataDir: '.', logger, timeoutMs: 300 });
    try {
      const started = Date.now();
      let failure: unknown;
      await mailer.send(message).catch((err: unknown) => (failure = err));
      expect(String(failure)).to.match(/greeting|timeout/i);
      // nodemailer's own greeting timeout is 30 s.
      expect(Date.now() - started).to.be.below(5_000);
      expect(sockets.size, 'the server was reached').to.equal(1);
    } finally {
      await mailer.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('a server that answers gets the mail, with the timeouts in place', async () => {
    const smtp = await startSmtpServer();
    const mailer = createMailer({ smtpUrl: smtp.url, from: 'Chat <no-reply@chat.test>', dataDir: '.', logger });
    try {
      await mailer.send(message);
      const got = await smtp.waitFor('someone@example.test', /^Hello$/);
      expect(got.text.trim()).to.equal('Hello');
    } finally {
      await mailer.close();
      await smtp.close();
    }
  });
});
