import type { MailMessage } from './mailer.ts';

// Plain-text mails. Links point at the web app (APP_URL), which posts the token to the API.
export const verificationMail = (to: string, link: string): MailMessage => ({
  to,
  subject: 'Confirm your e-mail address',
  link,
  text: `Welcome!\n\nConfirm your e-mail address by opening this link within 24 hours:\n\n${link}\n\nIf you did not sign up, ignore this mail.\n`,
});

export const passwordResetMail = (to: string, link: string): MailMessage => ({
  to,
  subject: 'Reset your password',
  link,
  text: `Someone asked to reset the password of this account.\n\nSet a new password within one hour:\n\n${link}\n\nIf it was not you, ignore this mail; your password stays as it is.\n`,
});

export const invitationMail = (to: string, tenantName: string, link: string): MailMessage => ({
  to,
  subject: `You are invited to ${tenantName}`,
  link,
  text: `You are invited to join ${tenantName}.\n\nAccept within 7 days:\n\n${link}\n`,
});

export const addedToTenantMail = (to: string, tenantName: string): MailMessage => ({
  to,
  subject: `You now have access to ${tenantName}`,
  text: `You were added to ${tenantName}. Log in and choose it to start.\n`,
});

export const webhookDisabledMail = (to: string, webhook: { id: string; url: string }, days: number): MailMessage => ({
  to,
  subject: 'A webhook endpoint was disabled',
  text:
    `Every delivery to the webhook endpoint ${webhook.url} (${webhook.id}) has failed for ${days} days, so it was disabled.\n\n` +
    `Its deliveries and their errors are listed at GET /v1/webhooks/${webhook.id}/deliveries. Once the receiver works ` +
    `again, enable it (PATCH /v1/webhooks/${webhook.id} with {"enabled": true}) and redeliver what it missed.\n`,
});
