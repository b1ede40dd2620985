import type { Database } from '../db/database.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/errors.ts';
import type { Handlers } from '../http/contract.ts';
import type { RedisLink } from '../redis/link.ts';
import { AppError } from '../shared/errors.ts';

/**
 * Ready means the database answers. Redis is reported but does not decide: every instance shares the one
 * Redis, so taking instances out when it is away would turn its outage into a whole one, while each
 * instance goes on without it (rate limits counted per instance, sessions checked in the database at every
 * request, presence per instance, events read from the feed by polling); only WebSocket tickets answer 503.
 * An instance shutting down (SIGTERM) is not ready from the signal on, so that a balancer sends it nothing
 * new while it drains.
 */
export const healthHandlers = (database: Database, redis?: RedisLink, draining: () => boolean = () => false): Pick<Handlers, 'getHealth' | 'getReady'> => ({
  getHealth: async () => ({ status: 200, body: { status: 'ok' } }),
  getReady: async () => {
    if (draining()) throw new AppError('ERR_UNAVAILABLE', 'The instance is shutting down', { headers: { 'Retry-After': '1' } });
    const [db, cache] = await Promise.allSettled([database.ping(), redis ? redis.ping() : Promise.resolve(true)]);
    if (db.status === 'rejected') {
      throw new AppError('ERR_UNAVAILABLE', 'The database does not answer', { headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) }, cause: db.reason });
    }
    const redisCheck = cache.status === 'fulfilled' && cache.value ? 'ok' : 'down';
    return { status: 200, body: { status: 'ok', checks: { database: 'ok', ...(redis ? { redis: redisCheck } : {}) } } };
  },
});
