import { domainToASCII } from 'node:url';
import { invalidInput } from '../shared/errors.ts';

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const invalid = (message: string) => invalidInput({ field: 'domain', message });

/**
 * A domain as stored: a lower-case ASCII host name (international names in their punycode form), or
 * `*.` and one, for every subdomain. Anything with a scheme, port, path, query or credentials is refused.
 */
export function normaliseDomain(input: string): string {
  const raw = input.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) throw invalid('must be a host name without a scheme (no https://)');
  if (/[/?#]/.test(raw)) throw invalid('must be a host name without a path, query or fragment');
  if (raw.includes('@')) throw invalid('must be a host name without credentials');
  if (raw.includes(':')) throw invalid('must be a host name without a port');
  const wildcard = raw.startsWith('*.');
  const host = wildcard ? raw.slice(2) : raw;
  if (host.includes('*')) throw invalid('may use * only as the first label (*.example.com)');
  const ascii = domainToASCII(host.toLowerCase().replace(/\.$/, ''));
  if (!ascii || ascii.length > 253 || !ascii.split('.').every((label) => LABEL.test(label))) throw invalid('is not a valid host name');
  return wildcard ? `*.${ascii}` : ascii;
}

/** Whether a browser Origin (scheme://host[:port]) is one of these domains. The port does not matter. */
export function originAllowed(origin: string | undefined, domains: string[]): boolean {
  if (!origin) return false;
  let host: string;
  try {
    const url = new URL(origin);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
    host = url.hostname.toLowerCase();
  } catch {
    return false;
  }
  return domains.some((d) => (d.startsWith('*.') ? host.endsWith(d.slice(1)) && host.length > d.length - 1 : host === d));
}
