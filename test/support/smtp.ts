import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
}

/** A real SMTP server on loopback that keeps what it receives. */
export async function startSmtpServer() {
  const received: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: mail.subject ?? '',
            text: mail.text ?? '',
          });
          for (const wake of waiters.splice(0)) wake();
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The first mail to this address whose subject matches, waiting for it up to 10 s. */
    async waitFor(to: string, subject: RegExp): Promise<ReceivedMail> {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const mail = received.find((m) => m.to.includes(to) && subject.test(m.subject));
        if (mail) return mail;
        if (Date.now() > deadline) throw new Error(`no mail to ${to} matching ${subject} (got: ${received.map((m) => m.subject).join(', ')})`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The token in the link of a mail (…?token=XYZ). */
export function tokenFromMail(mail: ReceivedMail): string {
  const match = /[?&]token=([\w-]+)/.exec(mail.text);
  if (!match?.[1]) throw new Error(`no link with a token in: ${mail.text}`);
  return match[1];
}
