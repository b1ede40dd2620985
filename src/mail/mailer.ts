import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** An HTML alternative to the text (transcripts). */
  html?: string;
  /** The link the mail is about, logged when mail goes to files so a developer can follow it. */
  link?: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

/** How long an SMTP server may take to accept the connection, to greet, and to answer at any point. */
export const SMTP_TIMEOUT_MS = 15_000;

// With SMTP_URL: real SMTP. Without: each mail is written as an .eml file under DATA_DIR/mail and its
// link logged, so sign-up and password reset work on a bare machine.
// nodemailer is loaded at the first mail, not at start: a restart does not wait for its modules.
const transportOf = async (options: Parameters<typeof import('nodemailer').createTransport>[0]): Promise<Transporter> =>
  (await import('nodemailer')).default.createTransport(options);

export function createMailer(options: { smtpUrl?: string | undefined; from: string; dataDir: string; logger: Logger; timeoutMs?: number }): Mailer {
  if (options.smtpUrl) {
    // nodemailer's own defaults wait up to two minutes for a connection, half a minute for the greeting
    // and ten minutes on a silent socket: a server that accepts and says nothing would hold a password
    // reset's request, or a workflow's mail action, that long.
    const timeoutMs = options.timeoutMs ?? SMTP_TIMEOUT_MS;
    const smtpUrl = options.smtpUrl;
    let transport: Promise<Transporter> | undefined;
    return {
      send: async (m) => {
        transport ??= transportOf({ url: smtpUrl, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs });
        await (await transport).sendMail({ from: options.from, to: m.to, subject: m.subject, text: m.text, ...(m.html ? { html: m.html } : {}) });
      },
      close: async () => (transport ? (await transport).close() : undefined),
    };
  }
  const dir = join(options.dataDir, 'mail');
  let transport: Promise<Transporter> | undefined;
  return {
    send: async (m) => {
      transport ??= transportOf({ streamTransport: true, buffer: true, newline: 'unix' });
      const info = await (await transport).sendMail({ from: options.from, to: m.to, subject: m.subject, text: m.text, ...(m.html ? { html: m.html } : {}) });
      await mkdir(dir, { recursive: true });
      const file = join(dir, `${new Date().toISOString().replaceAll(':', '-')}-${info.messageId.replace(/[^\w.-]/g, '')}.eml`);
      await writeFile(file, info.message as Buffer);
      options.logger.info({ to: m.to, subject: m.subject, file, link: m.link }, 'mail written to file (no SMTP_URL)');
    },
    close: async () => undefined,
  };
}
