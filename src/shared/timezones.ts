import { AppError } from './errors.ts';

export function isValidTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

export const invalidTimeZone = () =>
  new AppError('ERR_VALIDATION', 'The request does not match the API contract', {
    fieldErrors: [{ path: '/body/timezone', message: 'must be an IANA time zone name' }],
  });
