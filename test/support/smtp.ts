import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { eventually } from './eventually.ts';

export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/**
 * A real SMTP server on loopback that keeps what it receives. `refuse` may answer a reply code for a
 * mail (451: try later, 550: never), which refuses it at the end of DATA; the refused are counted.
 */
export async function startSmtpServer(options: { refuse?: () => number | undefined } = {}) {
  let refused = 0;
  const received: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          const code = options.refuse?.();
          if (code !== undefined) {
            refused++;
            callback(Object.assign(new Error(code >= 500 ? 'mailbox unavailable' : 'try again later'), { responseCode: code }));
            return;
          }
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: mail.subject ?? '',
            text: mail.text ?? '',
            html: typeof mail.html === 'string' ? mail.html : '',
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
    /** How many mails were refused with a code from `refuse`. */
    get refused() {
      return refused;
    },
    /** The first mail to this address whose subject matches, waiting for it up to 10 s. */
    waitFor(to: string, subject: RegExp): Promise<ReceivedMail> {
      return eventually(() => received.find((m) => m.to.includes(to) && subject.test(m.subject)), () => `a mail to ${to} matching ${subject} (got: ${received.map((m) => m.subject).join(', ')})`, {
        wake: (wakeUp) => waiters.push(wakeUp),
      });
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
