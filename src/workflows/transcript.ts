import escapeHtml from 'escape-html';
import type { components } from '../../generated/api.ts';
import type { MailMessage } from '../mail/mailer.ts';

type S = components['schemas'];

// The transcript a workflow mails: the conversation as its visitor saw it. Internal notes never reach it
// (the caller reads the visitor's view), and nobody on the team is named: members and bots are "Support".

const SENDER_LABEL: Record<S['SenderType'], string> = { visitor: 'You', user: 'Support', bot: 'Support', system: '' };

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const time = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

export function transcriptMail(to: string, conversation: { subject: string | null; created_at: string }, messages: S['Message'][]): MailMessage {
  const title = conversation.subject ? `Transcript: ${conversation.subject}` : 'Transcript of your conversation';
  const text: string[] = [title, `Started ${time(conversation.created_at)}`, ''];
  const html: string[] = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    `<h1 style="font-size:18px">${escapeHtml(title)}</h1>`,
    `<p style="color:#666">Started ${escapeHtml(time(conversation.created_at))}</p>`,
  ];
  for (const m of messages) {
    const who = SENDER_LABEL[m.sender_type];
    const files = m.attachments.map((a) => `${a.name} (${formatSize(a.size)})`);
    if (who) {
      text.push(`[${time(m.created_at)}] ${who}: ${m.content}`);
      html.push(`<p><strong>${escapeHtml(who)}</strong> <span style="color:#666">${escapeHtml(time(m.created_at))}</span><br>${escapeHtml(m.content).replaceAll('\n', '<br>')}</p>`);
    } else {
      text.push(`[${time(m.created_at)}] -- ${m.content}`);
      html.push(`<p style="color:#666"><em>${escapeHtml(m.content)}</em></p>`);
    }
    if (files.length > 0) {
      text.push(...files.map((f) => `    Attachment: ${f}`));
      html.push(`<ul>${files.map((f) => `<li>Attachment: ${escapeHtml(f)}</li>`).join('')}</ul>`);
    }
  }
  html.push('</body></html>');
  return { to, subject: title, text: `${text.join('\n')}\n`, html: html.join('\n') };
}
