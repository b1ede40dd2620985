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
