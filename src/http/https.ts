import type { RequestHandler } from 'express';
import { AppError } from '../shared/errors.ts';

// Probes of a load balancer or orchestrator come over plain HTTP from inside the network.
const PROBES = new Set(['/api/health', '/api/ready']);

/**
 * Refuses requests that did not arrive over TLS: served directly (TLS_CERT_FILE) or through a trusted
 * proxy that says X-Forwarded-Proto: https (req.secure honours 'trust proxy'). HSTS on secure answers.
 */
export function requireHttps(): RequestHandler {
  return (req, res, next) => {
    if (req.secure) {
      res.setHeader('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
      return next();
    }
    if (PROBES.has(req.path)) return next();
    next(new AppError('ERR_HTTPS_REQUIRED', 'Use HTTPS: tokens must never travel over plain HTTP'));
  };
}
