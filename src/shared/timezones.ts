import { invalidInput } from './errors.ts';

export function isValidTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

export const invalidTimeZone = () => invalidInput({ field: 'timezone', message: 'must be an IANA time zone name' });
