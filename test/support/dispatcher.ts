import pino from 'pino';
import { type DispatcherOptions, WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher.ts';
import type { Harness } from './harness.ts';

/**
 * A webhook dispatcher on the harness's database and mailer, silent, allowed to post to loopback
 * receivers; each test gives its bus and whatever it tunes (timeouts, slots, polling).
 */
export function testDispatcher(h: Harness, options: Omit<DispatcherOptions, 'database' | 'logger' | 'mailer' | 'allowPrivate'> & Partial<DispatcherOptions>) {
  return new WebhookDispatcher({ database: h.database, logger: pino({ level: 'silent' }), mailer: h.deps.mailer, allowPrivate: true, ...options });
}
